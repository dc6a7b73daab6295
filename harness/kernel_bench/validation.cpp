#include "harness/kernel_bench/validation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace lpbench::kernel_bench {

namespace {

using kernels::reference::Quantized;

// The dequantized rows `rows` of q, in FP32.
at::Tensor dequantized_rows(const Quantized& q, const at::Tensor& rows) {
  Quantized part = q;
  part.values = q.values.index_select(0, rows);
  if (q.scales.size(0) > 1) {
    // Each selected row keeps its own scale row: a block-row grid becomes one row per row.
    part.scales = q.scales.index_select(0, at::floor_divide(rows, q.block_rows()));
    part.spec.block_rows = 1;
  }
  return kernels::reference::dequantize(part, at::kFloat);
}

std::string dims(const at::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes(), "x"));
}

}  // namespace

Check check_product(const at::Tensor& c, const kernels::GemmOperand& a,
                    const kernels::GemmOperand& b, const kernels::GemmSpec& spec, double tolerance,
                    int64_t sample_rows) {
  Check check;
  check.tolerance = tolerance;
  const int64_t m = c.size(0);
  const int64_t count = std::min(m, sample_rows);
  const at::Tensor rows =
      at::linspace(0, static_cast<double>(m - 1), count, c.options().dtype(at::kDouble))
          .round()
          .to(at::kLong);
  at::Tensor reference;
  if (spec.quantized()) {
    reference =
        at::mm(dequantized_rows(*a.q, rows), kernels::reference::dequantize(*b.q, at::kFloat).t());
  } else {
    reference = at::mm(a.bf16.index_select(0, rows).to(at::kFloat), b.bf16.to(at::kFloat).t());
  }
  const at::Tensor got = c.index_select(0, rows).to(at::kFloat);
  if (!at::isfinite(got).all().item<bool>()) {
    check.error = std::numeric_limits<double>::infinity();
    check.reason = "the result holds non-finite values where the reference has none";
    if (!at::isfinite(reference).all().item<bool>()) check.reason = "the reference is not finite";
    return check;
  }
  const double norm = reference.norm().item<double>();
  const double diff = (got - reference).norm().item<double>();
  check.error = norm > 0 ? diff / norm : diff;
  check.ok = check.error <= tolerance;
  if (!check.ok) {
    check.reason = fmt::format(
        "validation failed: relative error {:.3g} of {} sampled rows against the FP32 reference "
        "exceeds the tolerance {:g}",
        check.error, count, tolerance);
  }
  return check;
}

Check check_quantized(const Quantized& got, const Quantized& want) {
  Check check;
  check.tolerance = 0.0;
  if (!got.values.sizes().equals(want.values.sizes()) ||
      !got.scales.sizes().equals(want.scales.sizes())) {
    check.error = std::numeric_limits<double>::infinity();
    check.reason =
        fmt::format("validation failed: values {} and scales {} where the reference has {} and {}",
                    dims(got.values), dims(got.scales), dims(want.values), dims(want.scales));
    return check;
  }
  // Bit patterns, so a NaN scale equals a NaN scale and -0 differs from 0 as the bits do.
  const auto mismatches = [](const at::Tensor& x, const at::Tensor& y) {
    const at::ScalarType bits = x.element_size() == 1 ? at::kByte : at::kInt;
    return x.contiguous().view(bits).ne(y.contiguous().view(bits)).sum().item<int64_t>();
  };
  const int64_t values = mismatches(got.values, want.values);
  const int64_t scales = mismatches(got.scales, want.scales);
  check.error = static_cast<double>(values + scales);
  check.ok = values == 0 && scales == 0;
  if (!check.ok) {
    check.reason = fmt::format(
        "validation failed: {} of {} values and {} of {} scales differ from the reference", values,
        got.values.numel(), scales, got.scales.numel());
  }
  return check;
}

}  // namespace lpbench::kernel_bench
