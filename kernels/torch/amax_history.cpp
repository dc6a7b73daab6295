#include "kernels/torch/amax_history.h"

namespace lpbench::kernels {

std::optional<at::Tensor> AmaxHistory::scaling_amax(const at::Tensor& like) {
  if (recorded_ == 0) return std::nullopt;
  // As integers the bits of non-negative floats order as the floats do, a NaN above +Inf.
  return bits_.to(like.device()).amax().reshape({1});
}

at::Tensor AmaxHistory::next_slot(const at::Tensor& like) {
  if (!bits_.defined() || bits_.device() != like.device()) {
    bits_ = at::zeros({length_}, like.options().dtype(at::kInt));
  }
  at::Tensor slot = bits_.narrow(0, recorded_ % length_, 1);
  slot.zero_();
  ++recorded_;
  return slot;
}

}  // namespace lpbench::kernels
