#include "kernels/torch/quantize_hadamard.h"

#include <array>
#include <optional>

#include "kernels/reference/hadamard.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/quantize_hadamard.cuh"
#include "kernels/torch/cuda_types.h"
#endif

namespace lpbench::kernels {

namespace {

#ifdef LPBENCH_CUDA_GLUE
// The launcher's arguments for t; values, scales and workspace are left to the caller.
cuda::HadamardQuantizeArgs args_for(const at::Tensor& t, bool transpose, int64_t block,
                                    cuda::DType out, bool rowwise) {
  cuda::HadamardQuantizeArgs a;
  a.x = t.data_ptr();
  a.rows = t.size(0);
  a.cols = t.size(1);
  a.ld = t.stride(0);
  a.transpose = transpose;
  a.block = block;
  a.out_type = out;
  a.rowwise = rowwise;
  return a;
}

cuda::HadamardQuantizeArgs args_for(const at::Tensor& t, bool transpose, int64_t block,
                                    const QuantSpec& spec) {
  return args_for(t, transpose, block, cuda_type(spec.format, "quantize_hadamard"),
                  is_rowwise(spec));
}

// The operand's sizes: t's, or tᵀ's.
std::array<int64_t, 2> operand_sizes(const at::Tensor& t, bool transpose) {
  return transpose ? std::array<int64_t, 2>{t.size(1), t.size(0)}
                   : std::array<int64_t, 2>{t.size(0), t.size(1)};
}

bool kernel_reads(const at::Tensor& t) {
  return t.is_cuda() && t.dim() == 2 && t.scalar_type() == at::kBFloat16 && t.stride(1) == 1;
}

// The rotation alone by the kernel, as FP32 (the reference's values, bit for bit), for the
// scalings it does not quantize itself; nullopt where it does not apply.
std::optional<at::Tensor> rotate_on_gpu(const at::Tensor& t, bool transpose, int64_t block) {
  if (!kernel_reads(t)) return std::nullopt;
  cuda::HadamardQuantizeArgs a = args_for(t, transpose, block, cuda::DType::fp32, false);
  // Asked before the output exists: a null pointer passes the alignment test, and torch's
  // allocations are 512-byte aligned.
  if (!cuda::hadamard_kernel_applies(a)) return std::nullopt;
  at::Tensor out = at::empty(operand_sizes(t, transpose), t.options().dtype(at::kFloat));
  a.values = out.data_ptr();
  cuda::quantize_hadamard(a, c10::cuda::getCurrentCUDAStream(t.device().index()).stream());
  return out;
}
#endif

}  // namespace

bool hadamard_kernel_takes(const at::Tensor& t, bool transpose, int64_t block,
                           const QuantSpec& spec, const AmaxHistory* history) {
#ifdef LPBENCH_CUDA_GLUE
  const bool tensorwise = spec.block_rows == 0 && spec.block_cols == 0;
  if (!kernel_reads(t) || history != nullptr || spec.rounding != Rounding::nearest ||
      spec.format == NumberFormat::bf16 || !(tensorwise || is_rowwise(spec))) {
    return false;
  }
  return cuda::hadamard_kernel_applies(args_for(t, transpose, block, spec));
#else
  (void)t;
  (void)transpose;
  (void)block;
  (void)spec;
  (void)history;
  return false;
#endif
}

Quantized quantize_hadamard(const at::Tensor& t, bool transpose, int64_t block,
                            const QuantSpec& spec, AmaxHistory* history) {
  TORCH_CHECK(t.dim() == 2, "quantize_hadamard takes a 2-D tensor, got ", t.sizes());
#ifdef LPBENCH_CUDA_GLUE
  if (hadamard_kernel_takes(t, transpose, block, spec, history)) {
    cuda::HadamardQuantizeArgs a = args_for(t, transpose, block, spec);
    const auto sizes = operand_sizes(t, transpose);
    Quantized q{at::empty(sizes, t.options().dtype(reference::storage_type(spec.format))),
                at::empty({a.rowwise ? sizes[0] : 1, 1}, t.options().dtype(at::kFloat)), spec};
    const at::Tensor workspace = at::empty(
        {static_cast<int64_t>(cuda::hadamard_workspace_bytes(a))}, t.options().dtype(at::kByte));
    a.values = q.values.data_ptr();
    a.scales = q.scales.data_ptr<float>();
    a.workspace = workspace.data_ptr();
    cuda::quantize_hadamard(a, c10::cuda::getCurrentCUDAStream(t.device().index()).stream());
    return q;
  }
  // Blocks, stochastic rounding, delayed scaling: the kernel rotates, quantize() quantizes.
  if (std::optional<at::Tensor> rotated = rotate_on_gpu(t, transpose, block)) {
    return quantize(*rotated, spec, false, history);
  }
#endif
  return quantize(reference::hadamard_rotate(transpose ? t.t() : t, block), spec, false, history);
}

}  // namespace lpbench::kernels
