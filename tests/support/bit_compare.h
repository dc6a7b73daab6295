#pragma once

// Bitwise comparisons for the GPU tests that hold a kernel's output to the CPU reference's bits,
// each failure naming its first mismatch.
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace lpbench::test_support {

// Bitwise equality of two same-shaped tensors of one element size, with the first mismatch.
inline ::testing::AssertionResult same_bits(const at::Tensor& expected, const at::Tensor& actual) {
  if (expected.sizes() != actual.sizes()) {
    return ::testing::AssertionFailure()
           << "shape " << actual.sizes() << ", expected " << expected.sizes();
  }
  const at::ScalarType bits = expected.element_size() == 1
                                  ? at::kByte
                                  : (expected.element_size() == 2 ? at::kShort : at::kInt);
  const at::Tensor e = expected.contiguous().view(bits).to(actual.device());
  const at::Tensor a = actual.contiguous().view(bits);
  const at::Tensor diff = e.ne(a);
  const int64_t count = diff.sum().item<int64_t>();
  if (count == 0) return ::testing::AssertionSuccess();
  const int64_t first = diff.flatten().nonzero()[0].item<int64_t>();
  const int64_t cols = expected.dim() > 1 ? expected.size(-1) : 1;
  return ::testing::AssertionFailure()
         << count << " of " << expected.numel() << " differ; first at [" << first / cols << ", "
         << first % cols << "]: got bits " << a.flatten()[first].item<int64_t>() << " ("
         << actual.flatten()[first].to(at::kFloat).item<float>() << "), expected bits "
         << e.flatten()[first].item<int64_t>() << " ("
         << expected.flatten()[first].to(at::kFloat).item<float>() << ")";
}

// FP32 scales: the same bits, except that a NaN matches any NaN.
inline ::testing::AssertionResult same_scales(const at::Tensor& expected,
                                              const at::Tensor& actual) {
  const at::Tensor e = expected.to(at::kCPU);
  const at::Tensor a = actual.to(at::kCPU);
  if (e.sizes() != a.sizes()) {
    return ::testing::AssertionFailure() << "scales " << a.sizes() << ", expected " << e.sizes();
  }
  if (!torch::equal(e.isnan(), a.isnan())) {
    return ::testing::AssertionFailure()
           << "NaN scales differ: got " << a.isnan().sum().item<int64_t>() << ", expected "
           << e.isnan().sum().item<int64_t>();
  }
  return same_bits(torch::where(e.isnan(), torch::zeros_like(e), e),
                   torch::where(a.isnan(), torch::zeros_like(a), a));
}

}  // namespace lpbench::test_support
