#include "kernels/torch/amax_history.h"

namespace lpbench::kernels {

AmaxHistory::Turn AmaxHistory::take_turn(const at::Tensor& like) {
  if (!ring_.defined() || ring_.device() != like.device()) {
    ring_ = at::zeros({slots()}, like.options().dtype(at::kInt));
  }
  Turn turn{ring_, recorded_ % slots(), recorded_ == 0};
  ++recorded_;
  return turn;
}

at::Tensor AmaxHistory::scaling_amax(const Turn& turn) {
  // As integers the bits of non-negative floats order as the floats do, a NaN above +Inf; the
  // two slots left out count as 0, the identity of that order.
  at::Tensor others = turn.ring.clone();
  others.narrow(0, turn.current, 1).zero_();
  others.narrow(0, turn.next(), 1).zero_();
  return others.amax().reshape({1});
}

void AmaxHistory::record(const Turn& turn, int32_t amax_bits) {
  turn.ring.narrow(0, turn.current, 1).fill_(static_cast<int64_t>(amax_bits));
  turn.ring.narrow(0, turn.next(), 1).zero_();
}

std::optional<at::Tensor> AmaxHistory::scaling_amax(const at::Tensor& like) const {
  if (recorded_ == 0) return std::nullopt;
  const Turn next{ring_, recorded_ % slots(), false};
  return scaling_amax(next).to(like.device());
}

}  // namespace lpbench::kernels
