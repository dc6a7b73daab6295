#include "kernels/torch/amax_history.h"

namespace lpbench::kernels {

namespace {

// The ring's current slot, as a tensor [1] on its device.
at::Tensor current_slot(const AmaxHistory::Turn& turn) {
  return turn.ring.narrow(0, turn.slots(), 1).to(at::kLong);
}

}  // namespace

AmaxHistory::Turn AmaxHistory::take_turn(const at::Tensor& like, bool captured) {
  if (!ring_.defined() || ring_.device() != like.device()) {
    ring_ = at::zeros({slots() + 1}, like.options().dtype(at::kInt));
  }
  // A replay's turns are the GPU's alone: once one is captured, the host's count no longer says
  // which slot is current.
  indexed_on_device_ = indexed_on_device_ || captured;
  Turn turn{ring_, recorded_ == 0, indexed_on_device_ ? -1 : recorded_ % slots()};
  ++recorded_;
  return turn;
}

at::Tensor AmaxHistory::scaling_amax(const Turn& turn) {
  // As integers the bits of non-negative floats order as the floats do, a NaN above +Inf; the
  // two slots left out count as 0, the identity of that order.
  const int64_t slots = turn.slots();
  const at::Tensor current = current_slot(turn);
  const at::Tensor index = at::arange(slots, turn.ring.options().dtype(at::kLong));
  const at::Tensor left_out = index.eq(current).logical_or(index.eq((current + 1) % slots));
  return turn.ring.narrow(0, 0, slots).masked_fill(left_out, 0).amax().reshape({1});
}

void AmaxHistory::record(const Turn& turn, int32_t amax_bits) {
  const int64_t slots = turn.slots();
  const int64_t current = turn.ring[slots].item<int32_t>();
  const int64_t next = (current + 1) % slots;
  turn.ring.narrow(0, current, 1).fill_(static_cast<int64_t>(amax_bits));
  turn.ring.narrow(0, next, 1).zero_();
  turn.ring.narrow(0, slots, 1).fill_(next);
}

std::optional<at::Tensor> AmaxHistory::scaling_amax(const at::Tensor& like) const {
  if (recorded_ == 0) return std::nullopt;
  return scaling_amax(Turn{ring_, false, -1}).to(like.device());
}

}  // namespace lpbench::kernels
