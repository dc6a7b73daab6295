#pragma once

#include <ATen/ATen.h>

#include <string>

#include "kernels/torch/gemm.h"

// Nothing is timed before it is checked: each case's result against a reference on the same
// operands, with a tolerance that follows the math.
namespace lpbench::kernel_bench {

struct Check {
  bool ok = false;
  double error = 0.0;  // the measure compared with the tolerance
  double tolerance = 0.0;
  std::string reason;  // empty when ok
};

// A product's output is BF16: each element is rounded once (relative error ≤ 2⁻⁹), so the
// relative Frobenius error against an FP32 product of the same operands stays near 2⁻⁹ whatever
// the format of the inputs; 1e-2 leaves room for accumulation order and no room for a wrong
// scale, block or transpose.
inline constexpr double kProductTolerance = 1e-2;

// C = A·Bᵀ checked on up to `sample_rows` rows of C spread over all of M (every tile row of a
// kernel is hit when M is small; a cheap check when it is large): against the FP32 product of
// the dequantized operands (quantized GEMMs) or of the BF16 operands.
Check check_product(const at::Tensor& c, const kernels::GemmOperand& a,
                    const kernels::GemmOperand& b, const kernels::GemmSpec& spec,
                    double tolerance = kProductTolerance, int64_t sample_rows = 256);

// A quantization against kernels/reference/quantize.h on the same input: equal bit for bit
// (values and scales), as the reference defines the numerics.
Check check_quantized(const kernels::reference::Quantized& got,
                      const kernels::reference::Quantized& want);

}  // namespace lpbench::kernel_bench
