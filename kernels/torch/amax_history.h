#pragma once

// Delayed scaling's state (GemmSpec::amax_history): per operand of a linear layer, the amaxes of
// its last n quantizations, kept on the operand's device so that no step waits for the host.
//
// The amaxes live in a ring of n + 2 slots (FP32 bits of |amax|, as INT32; 0 where nothing is
// recorded yet). Quantization k records into slot k % (n + 2), which is zero when it starts, and
// is scaled by the largest of the other slots but the one after its own: the n amaxes before it.
// Whoever records into a slot zeroes the next one, the slot of quantization k + 1, which then
// holds nothing the history needs. So the GPU's one-pass kernel finds the history's amax, scales,
// records and clears in the same launch (QuantizeArgs::history), with no reduction or fill of
// its own before it.
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace lpbench::kernels {

class AmaxHistory {
 public:
  explicit AmaxHistory(int64_t length) : length_(length) {}

  // One quantization's place in the history: the ring (on the operand's device), its slot, and
  // whether it is the first (no history yet: it is scaled by its own amax, which it records).
  struct Turn {
    at::Tensor ring;
    int64_t current = 0;
    bool first = false;
    int64_t next() const { return (current + 1) % ring.numel(); }
  };

  // The next quantization's turn (call once per quantization; the ring is made, zeroed, on
  // `like`'s device the first time).
  Turn take_turn(const at::Tensor& like);

  // The amax `turn` is scaled by, as the bits of an FP32 in an INT32 tensor [1] on the ring's
  // device: the largest of its ring but its own slot and the next (a NaN or Inf there carries on,
  // as in the reference).
  static at::Tensor scaling_amax(const Turn& turn);

  // Records `amax_bits` (|amax| as FP32 bits) into the turn's slot and zeroes the next: what the
  // GPU's quantizing pass does itself, for the CPU's reference.
  static void record(const Turn& turn, int32_t amax_bits);

  // What the next quantization would be scaled by, on `like`'s device; none before the first.
  std::optional<at::Tensor> scaling_amax(const at::Tensor& like) const;

  int64_t length() const { return length_; }
  int64_t recorded() const { return recorded_; }

 private:
  int64_t slots() const { return length_ + 2; }
  int64_t length_;
  int64_t recorded_ = 0;  // quantizations so far
  at::Tensor ring_;       // [length_ + 2] INT32
};

// The three operands of one linear layer.
struct LinearAmaxHistories {
  explicit LinearAmaxHistories(int64_t length) : x(length), w(length), dy(length) {}
  AmaxHistory x, w, dy;
};

}  // namespace lpbench::kernels
