#pragma once

// Delayed scaling's state (GemmSpec::amax_history): per operand of a linear layer, the amaxes of
// its last n quantizations, kept on the operand's device so that no step waits for the host.
//
// The amaxes live in a ring of n + 2 slots (FP32 bits of |amax|, as INT32; 0 where nothing is
// recorded yet), followed by the index of the current slot. A quantization records into the
// current slot, which is zero when it starts, and is scaled by the largest of the other slots but
// the one after its own: the n amaxes before it. It zeroes that next slot, which then holds
// nothing the history needs, and makes it the current one. So the GPU's one-pass kernel finds
// the history's amax, scales, records, clears and moves on in the same launch
// (QuantizeArgs::history), with no reduction or fill before it. The host counts the turns and says
// which slot is current, until a turn is taken while a CUDA graph is captured (`--cuda-graph`):
// from then on the ring's index says, read by the kernel and moved on by a one-thread launch after
// it (kernels/cuda/amax_ring.cuh), so that a replayed step, which the host does not see, scales
// as the eager step would.
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace lpbench::kernels {

class AmaxHistory {
 public:
  explicit AmaxHistory(int64_t length) : length_(length) {}

  // One quantization's place in the history: the ring (on the operand's device), whether it is
  // the first (no history yet: it is scaled by its own amax, which it records), and the slot it
  // records into, or -1 where only the ring's index knows it.
  struct Turn {
    at::Tensor ring;
    bool first = false;
    int64_t current = -1;
    int64_t slots() const { return ring.numel() - 1; }
  };

  // The next quantization's turn (call once per quantization; the ring is made, zeroed, on
  // `like`'s device the first time). `captured`: the turn is taken while a CUDA graph is captured,
  // so this and every later turn's slot is the ring's index's to say.
  Turn take_turn(const at::Tensor& like, bool captured = false);

  // The amax `turn` is scaled by, as the bits of an FP32 in an INT32 tensor [1] on the ring's
  // device: the largest of its ring but the current slot and the next (a NaN or Inf there carries
  // on, as in the reference). Reads nothing back to the host.
  static at::Tensor scaling_amax(const Turn& turn);

  // Records `amax_bits` (|amax| as FP32 bits) into the current slot, zeroes the next and makes it
  // the current one: what the GPU's quantizing pass does itself, for the CPU's reference.
  static void record(const Turn& turn, int32_t amax_bits);

  // What the next quantization would be scaled by, on `like`'s device; none before the first.
  std::optional<at::Tensor> scaling_amax(const at::Tensor& like) const;

  int64_t length() const { return length_; }
  // Quantizations the host has queued (a replayed CUDA graph's are the GPU's alone: not counted).
  int64_t recorded() const { return recorded_; }

 private:
  int64_t slots() const { return length_ + 2; }
  int64_t length_;
  int64_t recorded_ = 0;
  bool indexed_on_device_ = false;  // since a turn was captured
  at::Tensor ring_;                 // [length_ + 2 slots, the current slot's index] INT32
};

// The three operands of one linear layer.
struct LinearAmaxHistories {
  explicit LinearAmaxHistories(int64_t length) : x(length), w(length), dy(length) {}
  AmaxHistory x, w, dy;
};

}  // namespace lpbench::kernels
