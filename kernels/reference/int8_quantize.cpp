#include "kernels/reference/int8_quantize.h"

namespace lpbench::kernels::reference {

namespace {
constexpr float kInt8Max = 127.0F;
}

at::Tensor absmax(const at::Tensor& x) {
  TORCH_CHECK(x.numel() > 0, "absmax of an empty tensor");
  // max() drops NaN on some paths; a NaN anywhere must make amax NaN.
  at::Tensor amax = x.abs().amax().to(at::kFloat);
  return at::where(x.isnan().any(), at::full({}, NAN, amax.options()), amax);
}

Int8Tensor quantize_int8_tensorwise(const at::Tensor& x) {
  at::Tensor amax = absmax(x);
  // Written so that a NaN amax stays NaN in the scale (a comparison with NaN is false).
  at::Tensor zero = amax.eq(0);
  at::Tensor scale = at::where(zero, at::ones_like(amax), amax / kInt8Max);
  at::Tensor inv_scale = at::where(zero, at::ones_like(amax), kInt8Max / amax);
  at::Tensor scaled = x.to(at::kFloat).mul(inv_scale).round();  // torch rounds half to even
  // A non-finite amax makes inv_scale 0 or NaN; zero the values, keep the scale non-finite.
  at::Tensor values = at::where(amax.isfinite(), scaled, at::zeros_like(scaled))
                          .clamp(-kInt8Max, kInt8Max)
                          .to(at::kChar);
  return {values, scale};
}

at::Tensor dequantize(const Int8Tensor& q, at::ScalarType dtype) {
  return q.values.to(at::kFloat).mul(q.scale).to(dtype);
}

at::Tensor dequantize_int32(const at::Tensor& acc, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, at::ScalarType dtype) {
  TORCH_CHECK(acc.scalar_type() == at::kInt, "dequantize_int32 expects an int32 accumulator");
  return acc.to(at::kFloat).mul(scale_a.mul(scale_b)).to(dtype);
}

}  // namespace lpbench::kernels::reference
