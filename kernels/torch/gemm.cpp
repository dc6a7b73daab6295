#include "kernels/torch/gemm.h"

#include "kernels/torch/int8_ops.h"

namespace lpbench::kernels {

GemmOperand prepare_operand(const at::Tensor& t, const GemmSpec& spec) {
  TORCH_CHECK(
      !spec.quantized() || (spec.format == NumberFormat::int8 && spec.scaling == Scaling::tensor),
      "unsupported GEMM spec ", describe(spec));
  if (!spec.quantized()) return {t, {}};
  Int8Tensor q = quantize_int8_tensorwise(t);
  return {q.values, q.scale};
}

GemmOperand transposed(const GemmOperand& op) {
  return {op.values.t(), op.scale};
}

at::Tensor gemm_nt(const GemmOperand& a, const GemmOperand& b, const GemmSpec& spec,
                   at::ScalarType out_dtype) {
  if (spec.quantized()) {
    return int8_gemm_dequantize({a.values, a.scale}, {b.values, b.scale}, out_dtype);
  }
  return at::mm(a.values, b.values.t());
}

}  // namespace lpbench::kernels
