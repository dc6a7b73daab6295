#pragma once

// Delayed scaling's state (GemmSpec::amax_history): per operand of a linear layer, the amaxes of
// its last n quantizations, kept on the operand's device so that no step waits for the host.
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace lpbench::kernels {

class AmaxHistory {
 public:
  explicit AmaxHistory(int64_t length) : length_(length) {}

  // The amax to scale this quantization by, as the bits of an FP32 in an INT32 tensor [1] on
  // `like`'s device: the largest of the history (a NaN or Inf there carries on, as in the
  // reference); none before the first quantization, which then finds its own amax.
  std::optional<at::Tensor> scaling_amax(const at::Tensor& like);

  // The history's slot for this quantization's own amax (INT32 [1], zeroed), into which the
  // quantizing pass folds max |x|. Call once per quantization, after scaling_amax.
  at::Tensor next_slot(const at::Tensor& like);

  int64_t length() const { return length_; }
  int64_t recorded() const { return recorded_; }

 private:
  int64_t length_;
  int64_t recorded_ = 0;  // quantizations so far
  at::Tensor bits_;       // [length_] INT32, the FP32 bits of |amax| (0 where nothing yet)
};

// The three operands of one linear layer.
struct LinearAmaxHistories {
  explicit LinearAmaxHistories(int64_t length) : x(length), w(length), dy(length) {}
  AmaxHistory x, w, dy;
};

}  // namespace lpbench::kernels
