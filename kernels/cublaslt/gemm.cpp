#include "kernels/cublaslt/gemm.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "kernels/cuda/check.cuh"

namespace lpbench::cublaslt {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

[[noreturn]] void fail(const char* expr, cublasStatus_t status, const char* file, int line) {
  throw cuda::CudaError(std::string(expr) + " failed: " + cublasLtGetStatusName(status) + " (" +
                        cublasLtGetStatusString(status) + ") at " + file + ":" +
                        std::to_string(line));
}

#define LT_CHECK(expr)                                                                    \
  do {                                                                                    \
    const cublasStatus_t lt_status_ = (expr);                                             \
    if (lt_status_ != CUBLAS_STATUS_SUCCESS) fail(#expr, lt_status_, __FILE__, __LINE__); \
  } while (0)

cudaDataType_t data_type(cuda::DType t) {
  switch (t) {
    case cuda::DType::bf16:
      return CUDA_R_16BF;
    case cuda::DType::fp32:
      return CUDA_R_32F;
    case cuda::DType::int8:
      return CUDA_R_8I;
    case cuda::DType::int32:
      return CUDA_R_32I;
    case cuda::DType::fp8_e4m3:
      return CUDA_R_8F_E4M3;
    case cuda::DType::fp8_e5m2:
      return CUDA_R_8F_E5M2;
  }
  throw std::invalid_argument("unknown DType");
}

cublasLtMatmulMatrixScale_t scale_mode(ScaleMode mode) {
  switch (mode) {
    case ScaleMode::scalar:
      return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case ScaleMode::outer_vector:
      return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case ScaleMode::vec128:
      return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case ScaleMode::blk128x128:
      return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  }
  throw std::invalid_argument("unknown ScaleMode");
}

// One handle and one workspace per device, made on first use.
struct DeviceState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

DeviceState& device_state() {
  static std::mutex mutex;
  static std::map<int, DeviceState> states;
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  DeviceState& state = states[device];
  if (state.handle == nullptr) {
    LT_CHECK(cublasLtCreate(&state.handle));
    LPBENCH_CUDA_CHECK(cudaMalloc(&state.workspace, kWorkspaceBytes));
  }
  return state;
}

// The descriptors of one problem, with the algorithm the heuristic chose for it.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  std::string why;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

// cuBLASLt is column-major: our row-major C[M,N] is its D[N,M]. With our B[N,K] (row-major, so
// column-major [K,N]) as its A, transposed, and our A[M,K] as its B, it computes
// D[N,M] = Bᵀ·A = (A·Bᵀ)ᵀ, which is our C: the "TN" form INT8 and FP8 tensor cores need.
std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, cublasComputeType_t compute,
                                cudaDataType_t scale, cudaDataType_t our_a, cudaDataType_t our_b,
                                cudaDataType_t our_c, int64_t m, int64_t n, int64_t k,
                                const Fp8GemmArgs* fp8) {
  auto plan = std::make_unique<Plan>();
  LT_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, scale));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t none = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof(transpose)));
  LT_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)));
  if (fp8 != nullptr) {
    // Its A is our B, its B our A.
    const int32_t a_mode = scale_mode(fp8->b_mode);
    const int32_t b_mode = scale_mode(fp8->a_mode);
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                            sizeof(a_mode)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                            sizeof(b_mode)));
  }
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->a, our_b, k, n, k));
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->b, our_a, k, m, k));
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->c, our_c, n, m, n));

  cublasLtMatmulPreference_t preference = nullptr;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const size_t workspace = kWorkspaceBytes;
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, plan->desc, plan->a, plan->b, plan->c, plan->c, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status == CUBLAS_STATUS_SUCCESS && found > 0) {
    plan->algo = result.algo;
    plan->found = true;
  } else {
    plan->why = status == CUBLAS_STATUS_SUCCESS ? "no algorithm found"
                                                : std::string(cublasLtGetStatusName(status));
  }
  return plan;
}

using PlanKey = std::tuple<int, int, int, int, int, int, int, int64_t, int64_t, int64_t>;

// Heuristic results cached per device and problem: the search costs far more than a GEMM.
Plan& cached_plan(cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t a,
                  cudaDataType_t b, cudaDataType_t c, int64_t m, int64_t n, int64_t k,
                  const Fp8GemmArgs* fp8) {
  static std::mutex mutex;
  static std::map<PlanKey, std::unique_ptr<Plan>> plans;
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const int modes = fp8 ? static_cast<int>(fp8->a_mode) * 8 + static_cast<int>(fp8->b_mode) : -1;
  const PlanKey key{device, compute, scale, a, b, c, modes, m, n, k};
  DeviceState& state = device_state();
  std::lock_guard<std::mutex> lock(mutex);
  auto& plan = plans[key];
  if (!plan) plan = make_plan(state.handle, compute, scale, a, b, c, m, n, k, fp8);
  return *plan;
}

}  // namespace

bool int8_gemm_supported(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 4 != 0) return false;
  return cached_plan(CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, m, n, k,
                     nullptr)
      .found;
}

void int8_gemm(const int8_t* a, const int8_t* b, int32_t* c, int64_t m, int64_t n, int64_t k,
               cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(m > 0 && n > 0 && k > 0, "empty problem");
  LPBENCH_CUDA_REQUIRE(k % 4 == 0, "INT8 tensor-core GEMMs need K % 4 == 0");
  Plan& plan = cached_plan(CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, m, n,
                           k, nullptr);
  if (!plan.found) {
    throw cuda::CudaError("cuBLASLt offers no INT8 algorithm for " + std::to_string(m) + "x" +
                          std::to_string(n) + "x" + std::to_string(k) + ": " + plan.why);
  }
  const int32_t alpha = 1;
  const int32_t beta = 0;
  DeviceState& state = device_state();
  LT_CHECK(cublasLtMatmul(state.handle, plan.desc, &alpha, b, plan.a, a, plan.b, &beta, c, plan.c,
                          c, plan.c, &plan.algo, state.workspace, kWorkspaceBytes, stream));
}

bool fp8_gemm_supported(const Fp8GemmArgs& args, std::string* why) {
  Plan& plan =
      cached_plan(CUBLAS_COMPUTE_32F, CUDA_R_32F, data_type(args.a_type), data_type(args.b_type),
                  data_type(args.c_type), args.m, args.n, args.k, &args);
  if (!plan.found && why != nullptr) *why = plan.why;
  return plan.found;
}

void fp8_gemm(const Fp8GemmArgs& args, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(args.m > 0 && args.n > 0 && args.k > 0, "empty problem");
  LPBENCH_CUDA_REQUIRE(args.k % 16 == 0, "FP8 tensor-core GEMMs need K % 16 == 0");
  Plan& plan =
      cached_plan(CUBLAS_COMPUTE_32F, CUDA_R_32F, data_type(args.a_type), data_type(args.b_type),
                  data_type(args.c_type), args.m, args.n, args.k, &args);
  if (!plan.found) {
    throw cuda::CudaError("cuBLASLt offers no FP8 algorithm for this problem: " + plan.why);
  }
  // Scale pointers are attributes of the descriptor, set per call (the cached plan is shared).
  const void* a_scale = args.b_scales;  // its A is our B
  const void* b_scale = args.a_scales;
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale,
                                          sizeof(a_scale)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale,
                                          sizeof(b_scale)));
  const float alpha = 1.0F;
  const float beta = 0.0F;
  DeviceState& state = device_state();
  LT_CHECK(cublasLtMatmul(state.handle, plan.desc, &alpha, args.b, plan.a, args.a, plan.b, &beta,
                          args.c, plan.c, args.c, plan.c, &plan.algo, state.workspace,
                          kWorkspaceBytes, stream));
}

std::string version() {
  const size_t v = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace lpbench::cublaslt
