#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

// The amaxes of a decoder layer's weights, found together before its forward, for the layer's
// tensorwise quantizations of them to take (amax_registry.h) instead of each running an amax pass
// of its own. Where an optimizer step reported them (AdamW writes each weight's BF16 copy and its
// amax, adamw_step.h), nothing is found again.
namespace lpbench::kernels {

// max |x| of each tensor as FP32 bits ([count] int32 on the first tensor's device; a NaN above
// +Inf): on the GPU one launch over all of them (kernels/cuda/tensors_amax.cuh), in chunks of the
// kernel's most, for contiguous BF16 tensors of whole 16-byte vectors; otherwise as fold_amax.
at::Tensor tensors_amax(const std::vector<at::Tensor>& tensors);

// Finds, in one tensors_amax call, the amax of each of `tensors` that has none remembered, and
// remembers it until this scope ends, when it forgets it again: what a tensor's amax was when the
// scope began says nothing about it once the scope has ended (the layer level's weights are the
// same tensors every step, never rewritten: the next step finds them again, as it would without
// the scope). Undefined tensors are skipped.
class ScopedAmaxes {
 public:
  explicit ScopedAmaxes(const std::vector<at::Tensor>& tensors);
  ~ScopedAmaxes();
  ScopedAmaxes(const ScopedAmaxes&) = delete;
  ScopedAmaxes& operator=(const ScopedAmaxes&) = delete;
  // How many amaxes it found (the rest were remembered already, or undefined).
  size_t found() const { return remembered_.size(); }

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> remembered_;  // (tensor, its amax)
};

}  // namespace lpbench::kernels
