// wgmma_bench: TOP/s of lpbench's Hopper INT8 GEMM (tensorwise on the heuristic's config, on the
// cooperative 128 × 256 and 128 × 128 tiles and in ping-pong, and block scaling; BF16 out) beside
// cuBLASLt INT8 (INT32 out,
// lpbench's heuristic-searched call), cuBLAS BF16 (torch matmul) and cuBLASLt FP8 (at::_scaled_mm,
// tensorwise, BF16 out), on llama2-7b's training GEMMs. Every wgmma variant is checked bit for bit
// against another path before it is timed (INT32 against cuBLASLt, tensorwise against cuBLASLt +
// lpbench's dequantize, block against lpbench's mma.sync kernel). Timing: CUDA events around each
// launch (or each --calls launches), inputs rotated over copies that together exceed 4× L2, 5
// warm-up launches, the median of --samples (default 30). Block scales as int8-block makes them: A
// 1 × kb; B kb × kb in fprop and dgrad (the weights), 1 × kb in wgrad (the activations; each column
// its own scale), kb the K block (--k-block, default 128: int8-block:k-block=<kb>).
//
//   wgmma_bench [--tokens 16384] [--samples 30] [--shapes N] [--t128-stages S] [--block-stages S]
//               [--pp-stages S]      (the ring of the two ping-pong columns, default the deepest;
//                                     the heuristic's column keeps its own, so that one process
//                                     times both depths)
//               [--uniform-b]        (128 × 128 B blocks in wgrad too: the tables before 2026-11-23
//                                     evening)
//               [--time-unchecked]   (times the wgmma runs even where their check failed: for
//                                     the timing-experiment builds, scripts/gpu-fold-diag)
//               [--cluster2]         (two more columns: the tensorwise and block configs again
//                                     in clusters of two CTAs sharing B by TMA multicast)
//               [--k-block KB]       (the block column's K block: 128, 256, 512 or 1024)
//               [--block-only]       (checks and times the block column and BF16 alone)
//               [--only-shape I]     (the I-th shape alone, 1-based: one shape under ncu)
//               [--calls C]          (launches a timing sample holds, default 1: with more, the
//                                     host's per-launch work overlaps the kernels before)
// (N: only the first N shapes; S: the pipeline depth of the 128 × 128 tensorwise run or of the
// block-scaled run, default the heuristic's)
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cublaslt/gemm.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/scaled_gemm.cuh"
#include "kernels/cuda/wgmma_gemm.cuh"
#include "tests/gpu/launch_timing.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace {

using namespace lpbench;

struct Operands {
  at::Tensor a8, b8;              // int8
  at::Tensor a16, b16;            // bf16
  at::Tensor af8, bf8;            // fp8 e4m3
  at::Tensor sa_block, sb_block;  // [m, kb], [ceil(n/b_rows), kb]
  int b_rows = 128;               // rows of B per block scale
  int64_t kblock = 128;           // the K block of the block scales
};

using tools::time_ms;
using tools::Timing;

// Launches a timing sample holds (--calls): 1 pays each launch's host-side submission (the GPU
// idles from the start event until the kernel arrives), more keep the queue full as a training
// step does (tools::time_ms).
int g_calls = 1;

double median_ms(const std::function<void(int)>& fn, int copies, int samples) {
  return time_ms(fn, copies, samples, g_calls).median;
}

cuda::ScaledGemmArgs args_of(const Operands& o, const at::Tensor& sa, const at::Tensor& sb,
                             bool block, const at::Tensor& c) {
  cuda::ScaledGemmArgs a;
  a.a = o.a8.data_ptr();
  a.b = o.b8.data_ptr();
  a.m = o.a8.size(0);
  a.n = o.b8.size(0);
  a.k = o.a8.size(1);
  a.a_scales = sa.data_ptr<float>();
  a.a_block_rows = block ? 1 : 0;
  a.b_scales = sb.data_ptr<float>();
  a.b_block_rows = block ? o.b_rows : 0;
  a.kblock = block ? o.kblock : 0;
  a.c = c.data_ptr();
  a.c_type = cuda::DType::bf16;
  return a;
}

bool same(const at::Tensor& x, const at::Tensor& y) {
  const at::ScalarType bits = x.element_size() == 2 ? at::kShort : at::kInt;
  return torch::equal(x.view(bits), y.view(bits));
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 16384;
  int samples = 30;
  int64_t max_shapes = 1000;
  int64_t only_shape = 0;   // 0: every shape up to max_shapes; I: the I-th alone (1-based)
  int narrow_stages = 0;    // 0: the heuristic's
  int block_stages = 0;     // 0: the heuristic's
  int pp_stages = 0;        // 0: the deepest ping-pong ring
  bool unchecked = false;   // time variants whose check failed (diagnostic builds)
  bool uniform_b = false;   // 128 × 128 B blocks for every GEMM, wgrad's too
  bool cluster2 = false;    // also time the tensorwise and block configs in clusters of two
  int64_t kblock = 128;     // the block column's K block
  bool block_only = false;  // time the block column and BF16 alone
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--time-unchecked" || flag == "--uniform-b" || flag == "--cluster2" ||
        flag == "--block-only") {
      (flag == "--uniform-b"    ? uniform_b
       : flag == "--cluster2"   ? cluster2
       : flag == "--block-only" ? block_only
                                : unchecked) = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return 2;
    }
    if (flag == "--tokens") {
      tokens = std::atoll(argv[i + 1]);
    } else if (flag == "--samples") {
      samples = std::atoi(argv[i + 1]);
    } else if (flag == "--shapes") {
      max_shapes = std::atoll(argv[i + 1]);
    } else if (flag == "--only-shape") {
      only_shape = std::atoll(argv[i + 1]);
    } else if (flag == "--calls") {
      g_calls = std::atoi(argv[i + 1]);
    } else if (flag == "--t128-stages") {
      narrow_stages = std::atoi(argv[i + 1]);
    } else if (flag == "--block-stages") {
      block_stages = std::atoi(argv[i + 1]);
    } else if (flag == "--pp-stages") {
      pp_stages = std::atoi(argv[i + 1]);
    } else if (flag == "--k-block") {
      kblock = std::atoll(argv[i + 1]);
    } else {
      std::fprintf(stderr,
                   "unknown flag %s; usage: wgmma_bench [--tokens N] [--samples S] [--shapes N] "
                   "[--t128-stages S] [--block-stages S] [--pp-stages S] [--uniform-b] "
                   "[--time-unchecked] "
                   "[--cluster2] [--k-block KB] [--block-only] [--only-shape I] [--calls C]\n",
                   argv[i]);
      return 2;
    }
  }
  if (tokens <= 0 || samples < 20 || max_shapes <= 0 || only_shape < 0 || g_calls < 1 ||
      narrow_stages < 0 || narrow_stages == 1 || narrow_stages > cuda::wgmma_max_stages(128) ||
      block_stages < 0 || block_stages == 1 || block_stages > cuda::wgmma_max_stages(128) ||
      pp_stages < 0 || pp_stages == 1 || pp_stages > cuda::wgmma_max_stages(128, true) ||
      (kblock != 128 && kblock != 256 && kblock != 512 && kblock != 1024)) {
    std::fprintf(
        stderr,
        "--tokens, --shapes and --calls must be positive, --only-shape not negative, --samples "
        "at least 20, --t128-stages and --block-stages 2 to %d, --pp-stages 2 to %d, --k-block "
        "128, 256, 512 or 1024\n",
        cuda::wgmma_max_stages(128), cuda::wgmma_max_stages(128, true));
    return 2;
  }
  if (!torch::cuda::is_available() || !cuda::wgmma_supported()) {
    std::fprintf(stderr, "wgmma_bench needs an sm_90 GPU (H100/H200)\n");
    return 2;
  }
  int device = 0, l2 = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  cudaDeviceProp prop{};
  LPBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf(
      "device: %s, L2 %d MiB, llama2-7b training GEMMs at %lld tokens, median of %d samples of "
      "%d launch(es)\n",
      prop.name, l2 >> 20, static_cast<long long>(tokens), samples, g_calls);
  std::printf("%-22s %-6s %11s %11s %11s %11s %11s %11s %11s %9s %11s  %s\n", "MxNxK", "gemm",
              "wg-tens", "wg-256", "wg-t128", "wg-pp", "wg-pp-c2", "wg-block", "lt-int8", "bf16",
              "fp8", "TOP/s; x = over bf16 | block spread, B scale blocks; wgmma configs");

  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (const auto& l : workloads::linear_shapes(workloads::builtin_model("llama2-7b"))) {
    for (const auto& [kind, s] : workloads::training_gemms(l, tokens)) {
      if (static_cast<int64_t>(seen.size()) >= max_shapes) break;
      if (!seen.insert({s.m, s.n, s.k}).second) continue;
      if (only_shape > 0 && static_cast<int64_t>(seen.size()) != only_shape) continue;
      const int64_t m = s.m, n = s.n, k = s.k, kb = (k + kblock - 1) / kblock;
      // As int8-block quantizes them in training: B is W (kblock × kblock blocks) in fprop and
      // dgrad, and the activations X (1 × kblock blocks along the tokens) in wgrad.
      const int b_rows =
          kind == kernels::GemmKind::wgrad && !uniform_b ? 1 : static_cast<int>(kblock);
      // Enough copies that one pass over them evicts L2 four times over (counted in BF16).
      const int64_t bytes = 2 * (m + n) * k;
      const int copies = static_cast<int>(std::clamp<int64_t>(4LL * l2 / bytes + 1, 2, 16));
      torch::manual_seed(1);
      std::vector<Operands> ops;
      for (int c = 0; c < copies; ++c) {
        Operands o;
        o.a8 = torch::randint(-127, 128, {m, k}, opts.dtype(at::kChar));
        o.b8 = torch::randint(-127, 128, {n, k}, opts.dtype(at::kChar));
        o.a16 = torch::randn({m, k}, opts.dtype(at::kBFloat16));
        o.b16 = torch::randn({n, k}, opts.dtype(at::kBFloat16));
        o.af8 = o.a16.to(at::kFloat8_e4m3fn);
        o.bf8 = o.b16.to(at::kFloat8_e4m3fn);
        o.sa_block = torch::rand({m, kb}, opts) * 1e-3 + 1e-4;
        o.sb_block = torch::rand({(n + b_rows - 1) / b_rows, kb}, opts) * 1e-3 + 1e-4;
        o.b_rows = b_rows;
        o.kblock = kblock;
        ops.push_back(o);
      }
      const at::Tensor one = torch::full({1}, 1e-3, opts);
      at::Tensor c_bf16 = torch::empty({m, n}, opts.dtype(at::kBFloat16));
      at::Tensor c_tensor_ref = torch::empty({m, n}, opts.dtype(at::kBFloat16));
      at::Tensor c_block_ref = torch::empty({m, n}, opts.dtype(at::kBFloat16));
      at::Tensor acc = torch::empty({m, n}, opts.dtype(at::kInt));
      at::Tensor acc_ref = torch::empty({m, n}, opts.dtype(at::kInt));
      const cudaStream_t stream = nullptr;
      // One launch of the wgmma kernel on copy i, tensorwise or block-scaled, with `config`
      // (null: the heuristic's).
      const auto tensor_run = [&](const cuda::WgmmaConfig* config) {
        return [&, config](int i) {
          cuda::wgmma_scaled_gemm(args_of(ops[i], one, one, false, c_bf16), stream, config);
        };
      };
      const auto block_run = [&](const cuda::WgmmaConfig* config) {
        return [&, config](int i) {
          cuda::wgmma_scaled_gemm(args_of(ops[i], ops[i].sa_block, ops[i].sb_block, true, c_bf16),
                                  stream, config);
        };
      };

      // Checked before timed, on copy 0: INT32 against cuBLASLt, tensorwise against cuBLASLt +
      // dequantize, block against the mma.sync kernel.
      const Operands& o0 = ops[0];
      cublaslt::int8_gemm(o0.a8.data_ptr<int8_t>(), o0.b8.data_ptr<int8_t>(),
                          acc_ref.data_ptr<int32_t>(), m, n, k, stream);
      cuda::wgmma_int8_gemm(o0.a8.data_ptr<int8_t>(), o0.b8.data_ptr<int8_t>(),
                            acc.data_ptr<int32_t>(), m, n, k, stream);
      const bool int32_ok = same(acc, acc_ref);
      cuda::dequantize_int32(acc_ref.data_ptr<int32_t>(),
                             args_of(o0, one, one, false, c_tensor_ref), stream);
      cuda::scaled_gemm_mma(args_of(o0, o0.sa_block, o0.sb_block, true, c_block_ref), stream);
      const auto tensor_passes = [&](const cuda::WgmmaConfig* config) {
        tensor_run(config)(0);
        return int32_ok && same(c_bf16, c_tensor_ref);
      };
      const auto block_passes = [&](const cuda::WgmmaConfig* config) {
        block_run(config)(0);
        return same(c_bf16, c_block_ref);
      };
      const bool tensor_ok = tensor_passes(nullptr);
      // Tensorwise on block mode's 128 × 128 tile: what the tile alone costs, so that the gap
      // between this column and wg-block is the K-block fold's.
      // The heuristic's 128-wide config: what it picks on a GPU too wide for 256-wide tiles.
      cuda::WgmmaConfig narrow = cuda::select_wgmma_config(
          {m, n, k, cuda::WgmmaScaling::tensor, cuda::DType::bf16, false}, 1 << 30);
      if (narrow_stages > 0) narrow.stages = narrow_stages;
      const bool narrow_ok = tensor_passes(&narrow);
      // Ping-pong: 128 × 128 tiles, each warpgroup its own, the deepest ring; alone and in
      // clusters of two.
      cuda::WgmmaConfig pp = narrow;
      pp.pingpong = true;
      pp.stages = pp_stages > 0 ? pp_stages : cuda::wgmma_max_stages(128, true);
      cuda::WgmmaConfig pp2 = pp;
      pp2.cluster_m = 2;
      const bool pp_ok = tensor_passes(&pp);
      // The cooperative 128 × 256 tile on a 4-deep ring: the heuristic's choice for these shapes
      // before ping-pong (docs/perf-log.md §23).
      cuda::WgmmaConfig wide = narrow;
      wide.tile_n = 256;
      wide.stages = std::min(4, cuda::wgmma_max_stages(256));
      const bool wide_ok = tensor_passes(&wide);
      const bool pp2_ok = tensor_passes(&pp2);
      cuda::WgmmaProblem pt{m, n, k, cuda::WgmmaScaling::tensor, cuda::DType::bf16, false};
      cuda::WgmmaProblem pb = pt;
      pb.scaling = cuda::WgmmaScaling::block;
      cuda::WgmmaConfig block_config = cuda::wgmma_config_for(pb);
      if (block_stages > 0) block_config.stages = block_stages;
      const bool block_ok = block_passes(&block_config);
      // The same configs in clusters of two (B multicast), each checked like its twin.
      cuda::WgmmaConfig tensor_c2 = cuda::wgmma_config_for(pt), block_c2 = block_config;
      tensor_c2.cluster_m = block_c2.cluster_m = 2;
      const bool tensor_c2_ok = cluster2 && tensor_passes(&tensor_c2);
      const bool block_c2_ok = cluster2 && block_passes(&block_c2);

      const double ops_count = 2.0 * m * n * k;
      auto tops = [&](double ms) { return ops_count / (ms * 1e-3) / 1e12; };
      // A wgmma variant is timed only where its check passed (or with --time-unchecked).
      const auto checked = [&](bool ok, const std::function<void(int)>& fn) {
        return ok || unchecked ? time_ms(fn, copies, samples, g_calls) : Timing{};
      };
      // --block-only: the other columns are neither checked against nor timed (-1: "-").
      const auto other = [&](const std::function<double()>& time) {
        return block_only ? -1.0 : time();
      };
      const double t_tensor = other([&] { return checked(tensor_ok, tensor_run(nullptr)).median; });
      const Timing block = checked(block_ok, block_run(&block_config));
      const double t_block = block.median;
      const double t_narrow = other([&] { return checked(narrow_ok, tensor_run(&narrow)).median; });
      const double t_wide = other([&] { return checked(wide_ok, tensor_run(&wide)).median; });
      const double t_pp = other([&] { return checked(pp_ok, tensor_run(&pp)).median; });
      const double t_pp2 = other([&] { return checked(pp2_ok, tensor_run(&pp2)).median; });
      const double t_tensor_c2 =
          cluster2 ? checked(tensor_c2_ok, tensor_run(&tensor_c2)).median : 0;
      const double t_block_c2 = cluster2 ? checked(block_c2_ok, block_run(&block_c2)).median : 0;
      const double t_lt = other([&] {
        return median_ms(
            [&](int i) {
              cublaslt::int8_gemm(ops[i].a8.data_ptr<int8_t>(), ops[i].b8.data_ptr<int8_t>(),
                                  acc_ref.data_ptr<int32_t>(), m, n, k, stream);
            },
            copies, samples);
      });
      const double t_bf16 = median_ms(
          [&](int i) { at::mm_out(c_bf16, ops[i].a16, ops[i].b16.t()); }, copies, samples);
      const double t_fp8 = other([&] {
        return median_ms(
            [&](int i) {
              (void)at::_scaled_mm(ops[i].af8, ops[i].bf8.t(), one, one, std::nullopt, std::nullopt,
                                   at::kBFloat16, /*use_fast_accum=*/false);
            },
            copies, samples);
      });
      const double bf = tops(t_bf16);
      auto cell = [&](double ms) {
        char buf[32];
        if (ms < 0) {
          std::snprintf(buf, sizeof buf, "%9s", "-");
        } else if (ms == 0) {
          std::snprintf(buf, sizeof buf, "%9s", "FAIL");
        } else {
          std::snprintf(buf, sizeof buf, "%5.0f %.2fx", tops(ms), tops(ms) / bf);
        }
        return std::string(buf);
      };
      const std::string c2_cells =
          cluster2 ? " | cluster 2: tensor " + cell(t_tensor_c2) + ", block " + cell(t_block_c2)
                   : "";
      const bool c2_ok = !cluster2 || (tensor_c2_ok && block_c2_ok);
      std::printf(
          "%-22s %-6s %s %s %s %s %s %s %s %9.0f %s%s  | block p10-p90 %.0f-%.0f TOP/s (B %s); "
          "tensor: %s; block: %s%s\n",
          (std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k)).c_str(),
          std::string(kernels::to_string(kind)).c_str(), cell(t_tensor).c_str(),
          cell(t_wide).c_str(), cell(t_narrow).c_str(), cell(t_pp).c_str(), cell(t_pp2).c_str(),
          cell(t_block).c_str(), cell(t_lt).c_str(), bf, cell(t_fp8).c_str(), c2_cells.c_str(),
          block.p90 > 0 ? tops(block.p90) : 0.0, block.p10 > 0 ? tops(block.p10) : 0.0,
          (std::to_string(b_rows) + "x" + std::to_string(kblock)).c_str(),
          cuda::to_string(cuda::wgmma_config_for(pt)).c_str(),
          cuda::to_string(block_config).c_str(),
          (block_only ||
           (int32_ok && tensor_ok && wide_ok && narrow_ok && pp_ok && pp2_ok && c2_ok)) &&
                  block_ok
              ? ""
          : unchecked ? "  CHECK FAILED (timed anyway)"
                      : "  CHECK FAILED (not timed)");
      std::fflush(stdout);
    }
  }
  if (only_shape > static_cast<int64_t>(seen.size())) {
    std::fprintf(stderr, "--only-shape %lld: there are %zu shapes; pick 1 to %zu\n",
                 static_cast<long long>(only_shape), seen.size(), seen.size());
    return 2;
  }
  return 0;
}
