// quantize_bench: the tensorwise quantizations of one llama2-7b layer's training step (int8-tensor:
// X, W and dY of the four linear layers, each into both layouts from one pass), timed on the
// one-pass tensorwise kernel and on the general tile kernel it replaced (QuantizeArgs::
// tile_kernel), beside a device-to-device copy as the bandwidth ceiling. X and dY are quantized
// with their producer's amax given, as the fused step does; W with its own amax pass. Each pair
// of kernels is first checked to give the same bytes.
//
// Timing: CUDA events around each call, inputs rotated over copies that together exceed 4× L2,
// 5 warm-up calls, the median and p10–p90 of --samples (default 50). Bytes: the BF16 read (twice
// where the amax pass reads it too) plus the two INT8 layouts written.
//
// With --scheme row, each operand per row and its transpose per row (int8-row's quantizations,
// QuantizeArgs::copy_rowwise): the row-pair kernel against the two paths it replaced (the rows
// kernel for X, the general path for Xᵀ); no amax is given, bytes are two reads and two writes.
// --producer-lines 1 gives X and dY every row's and column's amax, as if each one's producer
// reported them (SwiGLU does; the norms and attention do not yet): one read for those.
//
// With --scheme hadamard, the operands int8-tensor:hadamard=<b> rotates (dY, Wᵀ for dgrad; dYᵀ, Xᵀ
// for wgrad), each rotated in blocks of --block (128) and quantized per tensor: the fused kernel
// (kernels/cuda/quantize_hadamard.cuh) against the torch ops it replaced (an FP32 copy, a matmul
// by H_b/√b per block, the quantization of the FP32 result). Its bytes are first checked against
// the reference rotation's. Bytes: two reads of the BF16 operand and one layout written.
//
// With --scheme block, the quantizations int8-block:k-block=<kb> (--k-block, 512) adds to the
// layer's that took the general path before its one-pass replacements: wgrad's Xᵀ and dYᵀ in 1 ×
// kb blocks (the columns kernel against the amax pass and the tile kernel's per-value lookups)
// and W with Wᵀ in kb × kb blocks (the apply pass's one inverse a tile against a lookup per
// value; both after the same amax pass). Bytes: one read and one write for the columns kernel,
// two reads and two writes for W.
//
//   quantize_bench [--tokens 4096] [--samples 50] [--format int8|fp8_e4m3]
//                  [--scheme tensor|row|hadamard|block] [--block 128] [--k-block 512] [--batch 1]
//                  [--producer-lines 0|1]
//
// --batch n times n back-to-back calls a sample and divides (launch_timing.h): the queue stays
// full, as in a training step, so the host's submission latency between the start event and the
// first kernel no longer counts. Every figure in docs/perf-log.md says which it used.
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/quantize_hadamard.cuh"
#include "kernels/reference/hadamard.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantize_hadamard.h"
#include "tests/gpu/launch_timing.h"

namespace {

using namespace lpbench;
using cuda::DType;

using tools::time_ms;
using tools::Timing;

struct Operand {
  std::string name;
  int64_t rows, cols;
  bool producer_amax;  // X and dY: the producing kernel reports max |x|
};

int int_flag(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// One operand's row of the table (the new path against the old), added into the layer's totals.
struct Totals {
  double new_ms = 0, old_ms = 0, bytes = 0;
  bool all_same = true;

  void row(const std::string& name, int64_t rows, int64_t cols, double op_bytes,
           const Timing& t_new, const Timing& t_old, double ceiling, bool same) {
    const double gbs = op_bytes / t_new.median / 1e6;
    std::printf(
        "%-12s %6lldx%-6lld %9.1f %8.4f (%.4f-%.4f) %8.4f (%.4f-%.4f) %7.0f %6.0f%% %5.2fx%s\n",
        name.c_str(), static_cast<long long>(rows), static_cast<long long>(cols), op_bytes / 1e6,
        t_new.median, t_new.p10, t_new.p90, t_old.median, t_old.p10, t_old.p90, gbs,
        100.0 * gbs / ceiling, t_old.median / t_new.median, same ? "" : "  DIFFERENT BYTES");
    new_ms += t_new.median;
    old_ms += t_old.median;
    bytes += op_bytes;
    all_same = all_same && same;
  }

  // The layer's line; non-zero (with `why` on stderr) where any operand's bytes differed.
  int finish(const char* new_name, const char* old_name, double ceiling, const char* why) const {
    std::printf("layer: %.1f MB, %s %.3f ms (%.0f GB/s, %.0f%% of copy), %s %.3f ms: %.2fx\n",
                bytes / 1e6, new_name, new_ms, bytes / new_ms / 1e6,
                100.0 * bytes / new_ms / 1e6 / ceiling, old_name, old_ms, old_ms / new_ms);
    if (all_same) return 0;
    std::fprintf(stderr, "quantize_bench: %s\n", why);
    return 1;
  }
};

// The hadamard=<b> path before the fused kernel: FP32 copy, a batched matmul by H_b / √b, the
// quantization of the FP32 result (the general path: an amax pass, then the tile kernel).
kernels::Quantized torch_hadamard(const at::Tensor& t, bool transpose, int64_t block,
                                  const kernels::QuantSpec& spec) {
  const at::Tensor m = (transpose ? t.t() : t).to(at::kFloat).contiguous();
  at::Tensor h = torch::ones({1, 1}, m.options());
  while (h.size(0) < block)
    h = torch::cat({torch::cat({h, h}, 1), torch::cat({h, -h}, 1)}, 0);
  h = h / std::sqrt(static_cast<double>(block));
  const at::Tensor rotated =
      at::matmul(m.reshape({m.size(0), m.size(1) / block, block}), h).reshape(m.sizes());
  return kernels::quantize(rotated, spec);
}

int hadamard_main(int64_t tokens, int samples, int batch, DType format, int64_t block,
                  double ceiling, int64_t l2_bytes) {
  struct Rotated {
    std::string name;
    int64_t rows, cols;  // of the tensor the step holds
    bool transpose;      // the operand is its transpose
  };
  const int64_t h = 4096, inner = 11008;
  const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> linears = {
      {"qkv", {h, 3 * h}}, {"o", {h, h}}, {"gate_up", {h, 2 * inner}}, {"down", {inner, h}}};
  std::vector<Rotated> ops;
  for (const auto& [name, kn] : linears) {
    const auto [k, n] = kn;
    ops.push_back({"dy." + name, tokens, n, false});  // dgrad, along N
    ops.push_back({"wT." + name, n, k, true});        // dgrad, along N
    ops.push_back({"dyT." + name, tokens, n, true});  // wgrad, along T
    ops.push_back({"xT." + name, tokens, k, true});   // wgrad, along T
  }
  const kernels::QuantSpec spec{
      format == DType::int8 ? kernels::NumberFormat::int8 : kernels::NumberFormat::fp8_e4m3, 0, 0};
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  std::printf("%-12s %13s %9s %22s %22s %7s %7s %6s\n", "operand", "shape", "MB moved",
              "fused ms (p10-p90)", "torch ms (p10-p90)", "GB/s", "of copy", "x old");
  Totals totals;
  for (const Rotated& op : ops) {
    const int64_t elems = op.rows * op.cols;
    const int copies = static_cast<int>(std::max<int64_t>(2, (4 * l2_bytes) / (2 * elems) + 1));
    std::vector<at::Tensor> xs;
    for (int c = 0; c < copies; ++c)
      xs.push_back(torch::randn({op.rows, op.cols}, cuda).mul(1 + c).to(at::kBFloat16));
    if (!kernels::hadamard_kernel_takes(xs[0], op.transpose, block, spec)) {
      std::fprintf(stderr, "quantize_bench: the fused kernel does not take %s\n", op.name.c_str());
      return 1;
    }
    const kernels::Quantized fused = kernels::quantize_hadamard(xs[0], op.transpose, block, spec);
    const kernels::Quantized ref = kernels::quantize(
        kernels::reference::hadamard_rotate(op.transpose ? xs[0].t() : xs[0], block), spec);
    bool same = torch::equal(fused.values.view(at::kByte), ref.values.view(at::kByte)) &&
                torch::equal(fused.scales, ref.scales);
    // The launcher into buffers made once, as the other schemes time theirs (the glue's three
    // allocations are host work that the step overlaps with the GPU's).
    const at::Tensor values = torch::empty_like(fused.values);
    const at::Tensor scales = torch::empty_like(fused.scales);
    const at::Tensor workspace = torch::empty({4 * (op.rows + op.cols)}, cuda.dtype(at::kByte));
    const auto launch = [&](int c) {
      cuda::HadamardQuantizeArgs a;
      a.x = xs[c].data_ptr();
      a.rows = op.rows;
      a.cols = op.cols;
      a.ld = op.cols;
      a.transpose = op.transpose;
      a.block = block;
      a.out_type = format;
      a.values = values.data_ptr();
      a.scales = scales.data_ptr<float>();
      a.workspace = workspace.data_ptr();
      cuda::quantize_hadamard(a, nullptr);
    };
    launch(0);
    same = same && torch::equal(values.view(at::kByte), fused.values.view(at::kByte));
    const Timing t_new = time_ms(launch, copies, samples, batch);
    const Timing t_old =
        time_ms([&](int c) { (void)torch_hadamard(xs[c], op.transpose, block, spec); }, copies,
                samples, batch);
    const int64_t out_rows = op.transpose ? op.cols : op.rows;
    const int64_t out_cols = op.transpose ? op.rows : op.cols;
    totals.row(op.name, out_rows, out_cols, 5.0 * elems, t_new, t_old, ceiling, same);
  }
  return totals.finish("fused", "torch", ceiling,
                       "the fused kernel's bytes differ from the reference's");
}

int block_main(int64_t tokens, int samples, int batch, DType format, int64_t kb, double ceiling,
               int64_t l2_bytes) {
  struct Blocked {
    std::string name;
    int64_t rows, cols;  // of the tensor the step holds
    bool weight;         // kb × kb with the transposed copy; else Xᵀ in 1 × kb blocks
  };
  const int64_t h = 4096, inner = 11008;
  const std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> linears = {
      {"qkv", {h, 3 * h}}, {"o", {h, h}}, {"gate_up", {h, 2 * inner}}, {"down", {inner, h}}};
  std::vector<Blocked> ops;
  for (const auto& [name, kn] : linears) {
    const auto [k, n] = kn;
    ops.push_back({"xT." + name, tokens, k, false});
    ops.push_back({"dyT." + name, tokens, n, false});
    ops.push_back({"w." + name, n, k, true});
  }
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  std::printf("%-12s %13s %9s %22s %22s %7s %7s %6s\n", "operand", "shape", "MB moved",
              "new ms (p10-p90)", "general ms (p10-p90)", "GB/s", "of copy", "x old");
  Totals totals;
  for (const Blocked& op : ops) {
    const int64_t elems = op.rows * op.cols;
    const int copies = static_cast<int>(std::max<int64_t>(2, (4 * l2_bytes) / (2 * elems) + 1));
    std::vector<at::Tensor> xs;
    for (int c = 0; c < copies; ++c)
      xs.push_back(torch::randn({op.rows, op.cols}, cuda).mul(1 + c).to(at::kBFloat16));
    const int64_t out_rows = op.weight ? op.rows : op.cols;
    const int64_t out_cols = op.weight ? op.cols : op.rows;
    const int64_t br = op.weight ? kb : 1;
    const at::Tensor values = torch::empty({out_rows, out_cols}, cuda.dtype(at::kByte));
    const at::Tensor values_t = torch::empty({out_cols, out_rows}, cuda.dtype(at::kByte));
    const at::Tensor scales =
        torch::empty({(out_rows + br - 1) / br, (out_cols + kb - 1) / kb}, cuda.dtype(at::kFloat));
    const at::Tensor scales_t = scales.t().contiguous();
    const auto args = [&](int c, bool old) {
      cuda::QuantizeArgs a;
      a.x = xs[c].data_ptr();
      a.rows = op.rows;
      a.cols = op.cols;
      a.ld = op.cols;
      a.transpose = !op.weight;
      a.out_type = format;
      a.block_rows = br;
      a.block_cols = kb;
      a.values = values.data_ptr();
      a.scales = scales.data_ptr<float>();
      if (op.weight) {
        a.values_t = values_t.data_ptr();
        a.scales_t = scales_t.data_ptr<float>();
      }
      a.tile_kernel = old;
      return a;
    };
    const at::Tensor workspace =
        torch::empty({static_cast<int64_t>(cuda::quantize_workspace_bytes(args(0, true))) + 16},
                     cuda.dtype(at::kByte));
    const auto run = [&](int c, bool old) {
      cuda::QuantizeArgs a = args(c, old);
      a.workspace = workspace.data_ptr();
      cuda::quantize(a, nullptr);
    };
    run(0, false);
    const at::Tensor v_new = values.clone(), vt_new = values_t.clone(), s_new = scales.clone();
    run(0, true);
    const bool same = torch::equal(v_new, values) && torch::equal(s_new, scales) &&
                      (!op.weight || torch::equal(vt_new, values_t));
    const Timing t_new = time_ms([&](int c) { run(c, false); }, copies, samples, batch);
    const Timing t_old = time_ms([&](int c) { run(c, true); }, copies, samples, batch);
    const double bytes = static_cast<double>(elems) * (op.weight ? 6 : 3);
    std::printf("[%s] ", cuda::quantize_kernel_name(args(0, false)));
    totals.row(op.name, out_rows, out_cols, bytes, t_new, t_old, ceiling, same);
  }
  return totals.finish("new", "general", ceiling, "the two paths wrote different bytes");
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "quantize_bench: no CUDA device\n");
    return 1;
  }
  const int64_t tokens = int_flag(argc, argv, "--tokens", 4096);
  const int samples = int_flag(argc, argv, "--samples", 50);
  const int batch = std::max(1, int_flag(argc, argv, "--batch", 1));
  const int64_t block = int_flag(argc, argv, "--block", 128);
  DType format = DType::int8;
  const int64_t k_block = int_flag(argc, argv, "--k-block", 512);
  // --scheme row: X and dY come with every row's and column's amax, as SwiGLU reports them
  // (QuantizeArgs::line_amax), so the row pair makes one pass over them where it made two.
  const bool producer_lines = int_flag(argc, argv, "--producer-lines", 0) != 0;
  bool row = false;
  bool hadamard = false;
  bool blocked = false;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--format") == 0 && std::strcmp(argv[i + 1], "fp8_e4m3") == 0) {
      format = DType::fp8_e4m3;
    }
    if (std::strcmp(argv[i], "--scheme") == 0) {
      row = std::strcmp(argv[i + 1], "row") == 0;
      hadamard = std::strcmp(argv[i + 1], "hadamard") == 0;
      blocked = std::strcmp(argv[i + 1], "block") == 0;
    }
  }
  if (k_block <= 0) {
    std::fprintf(stderr,
                 "quantize_bench: --k-block must be positive (256, 512 and 1024 take the "
                 "one-pass kernels), got %lld\n",
                 static_cast<long long>(k_block));
    return 2;
  }
  const int64_t h = 4096, inner = 11008;
  const std::vector<Operand> ops = {{"x.qkv", tokens, h, true},
                                    {"x.o", tokens, h, true},
                                    {"x.gate_up", tokens, h, true},
                                    {"x.down", tokens, inner, true},
                                    {"w.qkv", 3 * h, h, false},
                                    {"w.o", h, h, false},
                                    {"w.gate_up", 2 * inner, h, false},
                                    {"w.down", h, inner, false},
                                    {"dy.qkv", tokens, 3 * h, true},
                                    {"dy.o", tokens, h, true},
                                    {"dy.gate_up", tokens, 2 * inner, true},
                                    {"dy.down", tokens, h, true}};

  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  LPBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);

  // The ceiling: a 1 GiB device-to-device copy (reads and writes 1 GiB each).
  const int64_t copy_bytes = int64_t{1} << 30;
  const at::Tensor src = torch::empty({copy_bytes}, cuda.dtype(at::kByte));
  const at::Tensor dst = torch::empty({copy_bytes}, cuda.dtype(at::kByte));
  const Timing copy = time_ms(
      [&](int) {
        LPBENCH_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), copy_bytes,
                                           cudaMemcpyDeviceToDevice, nullptr));
      },
      1, 20);
  const double ceiling = 2.0 * copy_bytes / copy.median / 1e6;  // GB/s
  std::printf("device %s, L2 %d MiB; %s %s, %lld tokens; copy ceiling %.0f GB/s\n", prop.name,
              prop.l2CacheSize >> 20, cuda::dtype_name(format),
              hadamard  ? "rotated, tensorwise"
              : row     ? "per row"
              : blocked ? "K blocks"
                        : "tensorwise",
              static_cast<long long>(tokens), ceiling);
  std::printf("timing: %d call%s a sample\n", batch, batch == 1 ? "" : "s back to back");
  if (hadamard) {
    return hadamard_main(tokens, samples, batch, format, block, ceiling, prop.l2CacheSize);
  }
  if (blocked) {
    std::printf("K block %lld\n", static_cast<long long>(k_block));
    return block_main(tokens, samples, batch, format, k_block, ceiling, prop.l2CacheSize);
  }
  std::printf("%-12s %13s %9s %22s %22s %7s %7s %6s\n", "operand", "shape", "MB moved",
              row ? "row pair ms (p10-p90)" : "tensorwise ms (p10-p90)",
              row ? "apart ms (p10-p90)" : "tile ms (p10-p90)", "GB/s", "of copy", "x old");

  Totals totals;
  for (const Operand& op : ops) {
    const int64_t elems = op.rows * op.cols;
    const int copies = static_cast<int>(
        std::max<int64_t>(2, (4 * static_cast<int64_t>(prop.l2CacheSize)) / (2 * elems) + 1));
    std::vector<at::Tensor> xs;
    std::vector<at::Tensor> amaxes;
    std::vector<at::Tensor> lines;  // each row's amax, then each column's
    for (int c = 0; c < copies; ++c) {
      xs.push_back(torch::randn({op.rows, op.cols}, cuda).mul(1 + c).to(at::kBFloat16));
      amaxes.push_back(
          xs.back().abs().max().to(at::kFloat).reshape({1}).view(at::kInt).contiguous());
      const at::Tensor a = xs.back().abs().to(at::kFloat);
      lines.push_back(at::cat({std::get<0>(a.max(1)), std::get<0>(a.max(0))}).view(at::kInt));
    }
    const bool given_lines = row && producer_lines && op.producer_amax;
    const at::Tensor values = torch::empty({op.rows, op.cols}, cuda.dtype(at::kByte));
    const at::Tensor values_t = torch::empty({op.cols, op.rows}, cuda.dtype(at::kByte));
    const at::Tensor scales = torch::empty({op.rows}, cuda.dtype(at::kFloat));
    const at::Tensor scales_t = torch::empty({op.cols}, cuda.dtype(at::kFloat));
    const at::Tensor workspace =
        torch::empty({4 * (op.rows + op.cols) + 16}, cuda.dtype(at::kByte));
    const auto args = [&](int c, bool tile) {
      cuda::QuantizeArgs a;
      a.x = xs[c].data_ptr();
      a.rows = op.rows;
      a.cols = op.cols;
      a.ld = op.cols;
      a.out_type = format;
      a.values = values.data_ptr();
      a.values_t = values_t.data_ptr();
      a.scales = scales.data_ptr<float>();
      a.scales_t = scales_t.data_ptr<float>();
      a.workspace = workspace.data_ptr();
      if (row) {
        a.block_rows = 1;
        a.copy_rowwise = true;
        if (given_lines)
          a.line_amax = reinterpret_cast<const uint32_t*>(lines[c].data_ptr<int32_t>());
      } else if (op.producer_amax) {
        a.amax = reinterpret_cast<const uint32_t*>(amaxes[c].data_ptr<int32_t>());
      }
      a.tile_kernel = tile;
      return a;
    };
    // Same bytes from both kernels.
    cuda::quantize(args(0, false), nullptr);
    const at::Tensor v_new = values.clone(), vt_new = values_t.clone();
    cuda::quantize(args(0, true), nullptr);
    const bool same = torch::equal(v_new, values) && torch::equal(vt_new, values_t);

    const Timing t_new =
        time_ms([&](int c) { cuda::quantize(args(c, false), nullptr); }, copies, samples, batch);
    const Timing t_tile =
        time_ms([&](int c) { cuda::quantize(args(c, true), nullptr); }, copies, samples, batch);
    const bool amax_pass = row ? !given_lines : !op.producer_amax;
    const double bytes = static_cast<double>(elems) * (amax_pass ? 4 : 2) + 2.0 * elems;
    totals.row(op.name, op.rows, op.cols, bytes, t_new, t_tile, ceiling, same);
  }
  return totals.finish("new", "old", ceiling, "the two kernels wrote different bytes");
}
