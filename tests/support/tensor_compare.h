#pragma once

// What the numerics tests compare tensors with.
#include <ATen/ATen.h>

namespace lpbench::test_support {

// ‖value − reference‖ / ‖reference‖, in double.
inline double relative_error(const at::Tensor& value, const at::Tensor& reference) {
  const at::Tensor r = reference.to(at::kDouble);
  return ((value.to(at::kDouble) - r).norm() / r.norm()).item<double>();
}

// A fresh leaf holding t's values, its gradient to be read after a backward.
inline at::Tensor leaf(const at::Tensor& t) {
  return t.detach().clone().requires_grad_(true);
}

}  // namespace lpbench::test_support
