#pragma once

#include <ATen/ATen.h>

// CPU reference of dynamic per-tensor INT8 quantization: the definition every other
// implementation (the CUDA kernels included) must reproduce bit for bit.
//
//   amax  = max |x|                         (FP32; exact for BF16 and FP32 inputs)
//   scale = amax / 127                      (FP32; the value one INT8 step stands for)
//   q     = clamp(rne(x * (127 / amax)), -127, 127)   (FP32 arithmetic, round half to even)
//
// Symmetric: -128 is never produced. amax == 0 gives scale 1 and q == 0, so dequantizing gives
// exact zeros. A non-finite amax (an Inf or NaN anywhere in x) gives a non-finite scale and
// q == 0, so everything computed from it is non-finite too: quantization never hides a
// non-finite input behind finite INT8 values.
namespace lpbench::kernels::reference {

struct Int8Tensor {
  at::Tensor values;  // int8, the shape of the input
  at::Tensor scale;   // float32 scalar: x ≈ values * scale
};

at::Tensor absmax(const at::Tensor& x);  // float32 scalar, on x's device
Int8Tensor quantize_int8_tensorwise(const at::Tensor& x);

// values * scale, rounded once to `dtype`.
at::Tensor dequantize(const Int8Tensor& q, at::ScalarType dtype);

// The dequantize epilogue of an INT8 GEMM: acc * (scale_a * scale_b), with acc converted to
// FP32 (round to nearest even), the scale product taken in FP32, the result rounded to `dtype`.
at::Tensor dequantize_int32(const at::Tensor& acc, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, at::ScalarType dtype);

}  // namespace lpbench::kernels::reference
