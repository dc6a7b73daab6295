#include "kernels/reference/scaled_gemm.h"

#include "kernels/reference/int8_gemm.h"

namespace lpbench::kernels::reference {

namespace {

// Per-row scales [rows] of `q` for K block `kb`.
at::Tensor row_scales(const Quantized& q, int64_t kb) {
  return q.scales.select(1, kb).repeat_interleave(q.block_rows()).narrow(0, 0, q.rows());
}

}  // namespace

at::Tensor scaled_gemm(const Quantized& a, const Quantized& b, at::ScalarType dtype,
                       const at::Tensor& bias) {
  TORCH_CHECK(a.cols() == b.cols(), "scaled_gemm: K mismatch, A ", a.values.sizes(), ", B ",
              b.values.sizes());
  const int64_t k = a.cols();
  const bool a_full = a.block_cols() >= k;
  const bool b_full = b.block_cols() >= k;
  const int64_t kbs = !a_full ? a.block_cols() : (!b_full ? b.block_cols() : k);
  TORCH_CHECK((a_full || a.block_cols() == kbs) && (b_full || b.block_cols() == kbs),
              "scaled_gemm: the operands' K blocks differ (", a.block_cols(), " and ",
              b.block_cols(), ")");
  const bool integer = a.spec.format == NumberFormat::int8;
  TORCH_CHECK(integer == (b.spec.format == NumberFormat::int8),
              "scaled_gemm: INT8 multiplies only INT8");

  at::Tensor c;
  for (int64_t kb = 0, k0 = 0; k0 < k; ++kb, k0 += kbs) {
    const int64_t width = std::min(kbs, k - k0);
    const at::Tensor av = a.values.narrow(1, k0, width);
    const at::Tensor bv = b.values.narrow(1, k0, width);
    const at::Tensor partial =
        integer ? int8_gemm(av, bv).to(at::kFloat)
                : at::mm(av.to(at::kDouble), bv.to(at::kDouble).t()).to(at::kFloat);
    const at::Tensor scale =
        at::outer(row_scales(a, a_full ? 0 : kb), row_scales(b, b_full ? 0 : kb));
    const at::Tensor term = partial * scale;
    c = c.defined() ? c + term : term;
  }
  if (bias.defined()) c = c + bias.to(at::kFloat);
  return c.to(dtype);
}

}  // namespace lpbench::kernels::reference
