#include "kernels/reference/cross_entropy.h"

namespace lpbench::kernels::reference {

CrossEntropyRows softmax_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                                       int64_t divisor) {
  const at::Tensor log_probs = at::log_softmax(logits.to(at::kFloat), -1);
  const at::Tensor target = targets.unsqueeze(1);
  at::Tensor loss_sum = -log_probs.gather(1, target).sum();
  // d(Σ loss / divisor)/d logits = (softmax − one-hot) / divisor
  at::Tensor grad = log_probs.exp();
  grad.scatter_add_(1, target, at::full({logits.size(0), 1}, -1.0, grad.options()));
  grad.div_(static_cast<double>(divisor));
  return {grad.to(logits.scalar_type()), loss_sum};
}

}  // namespace lpbench::kernels::reference
