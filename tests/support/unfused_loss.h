#pragma once

// The output layer and loss (kernels/torch/linear_cross_entropy.h) against the unfused product
// and libtorch's cross-entropy on the same tensors and device: what the operator's CPU test (the
// chunked reference) and GPU test (the kernel) both compare.
#include <ATen/ATen.h>

#include "kernels/torch/linear_cross_entropy.h"
#include "tests/support/tensor_compare.h"

namespace lpbench::test_support {

struct LossAgainstUnfused {
  double loss = 0.0;
  double unfused_loss = 0.0;
  double dh_error = 0.0;  // relative_error of the hidden states' gradient
  double dw_error = 0.0;  // and of the master weight's
  at::ScalarType dw_type = at::kFloat;
};

// h0 [N, hidden] BF16, master0 [vocab, hidden] FP32, targets [N]. Both losses' backward starts
// from `scale` (1 as loss.backward() gives, 1 / k as a mean over k micro-batches does).
inline LossAgainstUnfused loss_against_unfused(const at::Tensor& h0, const at::Tensor& master0,
                                               const at::Tensor& targets, int64_t chunk_tokens,
                                               double scale = 1.0) {
  at::Tensor h = leaf(h0), master = leaf(master0);
  const at::Tensor loss = kernels::linear_cross_entropy(h, master.detach().to(at::kBFloat16),
                                                        master, targets, chunk_tokens);
  (loss * scale).backward();
  at::Tensor hu = leaf(h0), masteru = leaf(master0);
  const at::Tensor logits = at::mm(hu, masteru.to(at::kBFloat16).t());
  const at::Tensor lossu = at::cross_entropy_loss(logits.to(at::kFloat), targets);
  (lossu * scale).backward();
  return {loss.item<double>(), lossu.item<double>(), relative_error(h.grad(), hu.grad()),
          relative_error(master.grad(), masteru.grad()), master.grad().scalar_type()};
}

}  // namespace lpbench::test_support
