#pragma once

// Two steps of one decoder layer compared, as the GPU tests of a change that must not move its
// bits do (a producer reporting an amax, a layer finding its weights' amaxes together).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/tensor_compare.h"

namespace lpbench::test_support {

// A layer step's output and every parameter's gradient, by name.
struct LayerStep {
  at::Tensor y;
  std::vector<std::pair<std::string, at::Tensor>> grads;
};

// The same output bit for bit, and the same gradients of the MLP's weights, which backward
// computes before attention's; attention's cuDNN backward may sum in another order from run to
// run, so the other gradients within 1e-2.
inline void expect_same_layer_step(const LayerStep& a, const LayerStep& b) {
  EXPECT_TRUE(a.y.equal(b.y));
  ASSERT_EQ(a.grads.size(), b.grads.size());
  int mlp = 0;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    const auto& [key, grad] = a.grads[i];
    SCOPED_TRACE(key);
    ASSERT_EQ(key, b.grads[i].first);
    if (key.find("mlp") != std::string::npos) {
      ++mlp;
      EXPECT_TRUE(grad.equal(b.grads[i].second));
    } else {
      EXPECT_LT(relative_error(grad, b.grads[i].second), 1e-2);
    }
  }
  EXPECT_GE(mlp, 2);
}

}  // namespace lpbench::test_support
