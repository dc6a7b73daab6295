#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "kernels/recipe.h"

// CPU reference of dynamic scaled quantization to INT8 or FP8, at any block granularity: the
// definition every other implementation (the CUDA kernels included) reproduces bit for bit.
//
// A matrix [R, C] is cut into blocks of block_rows × block_cols (0 meaning the whole dimension:
// {0,0} is tensorwise, {1,0} rowwise, {1,128} and {128,128} the blockwise schemes). Per block:
//
//   amax  = max |x|                          (FP32; exact for BF16 and FP32 inputs)
//   scale = amax / fmax                      (FP32; fmax = 127, 448 for E4M3, 57344 for E5M2)
//   q     = cast(clamp(x · (fmax / amax)))   (FP32 arithmetic; INT8 rounds half to even before
//                                             the clamp, FP8 casts round to nearest even)
//
// With stochastic rounding (INT8 only), q = floor(x · (fmax / amax) + u) instead, where u in
// [0, 1) is rounding_uniform(seed, i) of the element's row-major index i in the quantized matrix
// (kernels/rounding_noise.h): up with the probability of the fraction, unbiased.
//
// Symmetric: INT8 never produces -128. amax == 0 gives scale 1 and q == 0. A non-finite amax
// (an Inf or NaN in the block) gives a non-finite scale and q == 0, so whatever is computed from
// that block is non-finite too: quantization never hides a non-finite input.
namespace lpbench::kernels::reference {

struct QuantSpec {
  NumberFormat format = NumberFormat::int8;
  int64_t block_rows = 0;  // 0: all rows
  int64_t block_cols = 0;  // 0: all columns
  Rounding rounding = Rounding::nearest;
  friend bool operator==(const QuantSpec&, const QuantSpec&) = default;
};

// Values in the format (int8, or torch's float8_e4m3fn / float8_e5m2) and FP32 scales of shape
// [ceil(R / block_rows), ceil(C / block_cols)]: x ≈ values · scales[r / br, c / bc].
struct Quantized {
  at::Tensor values;
  at::Tensor scales;
  QuantSpec spec;
  int64_t rows() const { return values.size(0); }
  int64_t cols() const { return values.size(1); }
  int64_t block_rows() const { return spec.block_rows > 0 ? spec.block_rows : rows(); }
  int64_t block_cols() const { return spec.block_cols > 0 ? spec.block_cols : cols(); }
};

double format_max(NumberFormat format);
at::ScalarType storage_type(NumberFormat format);

// x: 2-D, any floating type. `seed` draws the noise of stochastic rounding (unused otherwise).
Quantized quantize(const at::Tensor& x, const QuantSpec& spec, uint64_t seed = 0);

// Tensorwise, by a given amax instead of x's own (delayed scaling: the largest amax of earlier
// steps): scale = amax / fmax as above, values beyond ±amax saturate at ±fmax, and a NaN value
// (which the given amax does not know of) becomes 0. An amax of 0 or non-finite acts as above.
Quantized quantize_by_amax(const at::Tensor& x, NumberFormat format, float amax);

// values · scales, rounded once to `dtype`.
at::Tensor dequantize(const Quantized& q, at::ScalarType dtype);

// The transpose of a quantized matrix (values and scales), as quantizing xᵀ with the
// transposed block shape would give: exact, since blocks map onto blocks.
Quantized transpose(const Quantized& q);

// The amax of each block [ceil(R/br), ceil(C/bc)] (FP32; NaN where a block holds a NaN).
at::Tensor block_absmax(const at::Tensor& x, int64_t block_rows, int64_t block_cols);

}  // namespace lpbench::kernels::reference
