#include "kernels/reference/quantize.h"

#include <ATen/ops/constant_pad_nd.h>

#include "kernels/rounding_noise.h"

namespace lpbench::kernels::reference {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// x as [R/br, br, C/bc, bc] blocks (FP32), zero-padded to whole blocks; zeros change no amax.
at::Tensor as_blocks(const at::Tensor& x, int64_t br, int64_t bc) {
  const int64_t rows = x.size(0);
  const int64_t cols = x.size(1);
  const int64_t rb = ceil_div(rows, br);
  const int64_t cb = ceil_div(cols, bc);
  at::Tensor padded =
      at::constant_pad_nd(x.to(at::kFloat), {0, cb * bc - cols, 0, rb * br - rows}).contiguous();
  return padded.view({rb, br, cb, bc});
}

// The noise of stochastic rounding for an R×C matrix (rounding_noise.h), on the CPU.
at::Tensor rounding_noise(int64_t rows, int64_t cols, uint64_t seed) {
  at::Tensor u = at::empty({rows, cols}, at::kFloat);
  float* p = u.data_ptr<float>();
  for (int64_t i = 0; i < rows * cols; ++i) {
    p[i] = rounding_uniform(seed, static_cast<uint64_t>(i));
  }
  return u;
}

}  // namespace

double format_max(NumberFormat format) {
  switch (format) {
    case NumberFormat::int8:
      return 127.0;
    case NumberFormat::fp8_e4m3:
      return 448.0;
    case NumberFormat::fp8_e5m2:
      return 57344.0;
    case NumberFormat::bf16:
      break;
  }
  TORCH_CHECK(false, "format_max: ", to_string(format), " is not a quantized format");
}

at::ScalarType storage_type(NumberFormat format) {
  switch (format) {
    case NumberFormat::int8:
      return at::kChar;
    case NumberFormat::fp8_e4m3:
      return at::kFloat8_e4m3fn;
    case NumberFormat::fp8_e5m2:
      return at::kFloat8_e5m2;
    case NumberFormat::bf16:
      return at::kBFloat16;
  }
  return at::kBFloat16;
}

at::Tensor block_absmax(const at::Tensor& x, int64_t block_rows, int64_t block_cols) {
  TORCH_CHECK(x.dim() == 2 && x.numel() > 0, "quantize takes a non-empty 2-D tensor, got ",
              x.sizes());
  const int64_t br = block_rows > 0 ? std::min(block_rows, x.size(0)) : x.size(0);
  const int64_t bc = block_cols > 0 ? std::min(block_cols, x.size(1)) : x.size(1);
  at::Tensor blocks = as_blocks(x, br, bc);
  at::Tensor amax = blocks.abs().amax({1, 3});
  // A NaN anywhere in a block makes its amax NaN, whatever amax's own NaN handling is.
  return at::where(blocks.isnan().any(3).any(1), at::full_like(amax, NAN), amax);
}

namespace {

// x quantized in br × bc blocks by the given block amaxes [rb, cb] (FP32).
Quantized quantize_blocks(const at::Tensor& x, const QuantSpec& spec, int64_t br, int64_t bc,
                          const at::Tensor& amax, uint64_t seed = 0) {
  const int64_t rows = x.size(0);
  const int64_t cols = x.size(1);
  const auto fmax = static_cast<float>(format_max(spec.format));
  at::Tensor one = at::ones_like(amax);
  // Tensor by tensor: torch's CUDA division by a scalar multiplies by its reciprocal, which
  // differs from IEEE division in the last bit for some amaxes.
  const at::Tensor fmax_t = at::full_like(amax, fmax);
  // An amax of 0, or below fmax / FLT_MAX (about 1e-36) where the inverse overflows, scales by 1:
  // the block's values round to 0 (an infinite inverse would send each of them to ±fmax).
  const at::Tensor raw_inv = fmax_t / amax;
  at::Tensor zero = raw_inv.isinf();
  at::Tensor scales = at::where(zero, one, amax / fmax_t);
  at::Tensor inv = at::where(zero, one, raw_inv);
  const int64_t rb = amax.size(0);
  const int64_t cb = amax.size(1);
  at::Tensor scaled = as_blocks(x, br, bc) * inv.view({rb, 1, cb, 1});
  if (spec.rounding == Rounding::stochastic) {
    const at::Tensor noise = rounding_noise(rows, cols, seed).to(x.device());
    scaled = (scaled + as_blocks(noise, br, bc)).floor();
  } else if (spec.format == NumberFormat::int8) {
    scaled = scaled.round();  // half to even
  }
  scaled = scaled.clamp(-fmax, fmax);
  // Only a given amax can miss a NaN value (an own amax would be NaN, zeroing the block below).
  scaled = at::where(scaled.isnan(), at::zeros_like(scaled), scaled);
  // A non-finite amax makes inv 0 or NaN; zero the values, keep the scale non-finite.
  scaled = at::where(amax.isfinite().view({rb, 1, cb, 1}), scaled, at::zeros_like(scaled));
  at::Tensor values = scaled.view({rb * br, cb * bc})
                          .narrow(0, 0, rows)
                          .narrow(1, 0, cols)
                          .to(storage_type(spec.format))
                          .contiguous();
  return {values, scales, spec};
}

}  // namespace

Quantized quantize(const at::Tensor& x, const QuantSpec& spec, uint64_t seed) {
  TORCH_CHECK(spec.format != NumberFormat::bf16, "quantize: BF16 is not a quantized format");
  TORCH_CHECK(spec.rounding == Rounding::nearest || spec.format == NumberFormat::int8,
              "quantize: stochastic rounding is for INT8 only");
  const int64_t rows = x.size(0);
  const int64_t cols = x.size(1);
  const int64_t br = spec.block_rows > 0 ? std::min(spec.block_rows, rows) : rows;
  const int64_t bc = spec.block_cols > 0 ? std::min(spec.block_cols, cols) : cols;
  return quantize_blocks(x, spec, br, bc, block_absmax(x, br, bc), seed);
}

Quantized quantize_by_amax(const at::Tensor& x, NumberFormat format, float amax) {
  TORCH_CHECK(format != NumberFormat::bf16, "quantize: BF16 is not a quantized format");
  const at::Tensor given = at::full({1, 1}, amax, x.options().dtype(at::kFloat));
  return quantize_blocks(x, {format, 0, 0}, x.size(0), x.size(1), given);
}

at::Tensor dequantize(const Quantized& q, at::ScalarType dtype) {
  const int64_t br = q.block_rows();
  const int64_t bc = q.block_cols();
  at::Tensor s = q.scales.repeat_interleave(br, 0).repeat_interleave(bc, 1);
  s = s.narrow(0, 0, q.rows()).narrow(1, 0, q.cols());
  return (q.values.to(at::kFloat) * s).to(dtype);
}

Quantized transpose(const Quantized& q) {
  return {q.values.t().contiguous(),
          q.scales.t().contiguous(),
          {q.spec.format, q.spec.block_cols, q.spec.block_rows, q.spec.rounding}};
}

}  // namespace lpbench::kernels::reference
