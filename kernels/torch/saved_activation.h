#pragma once

#include <ATen/ATen.h>

// What a fused operator keeps of a tensor between its forward and its backward: the tensor
// itself, or under saved=int8 (kernels/recipe.h, SavedActivations) its last dimension cut into
// blocks of 128, each block scaled by its own amax and rounded to nearest INT8
// (kernels/reference/quantize.h, spec int8 {1, 128}: the GPU's block kernel where the tensor is
// on the GPU, bit for bit the reference), so that it takes 1 + 4/128 bytes an element instead
// of 2. The backward reads it back as values · scales rounded once to the tensor's type: in one
// pass on the GPU (kernels/cuda/saved_activation.cuh, BF16), libtorch arithmetic elsewhere.
namespace lpbench::kernels {

struct SavedActivation {
  at::Tensor values;  // the tensor itself, or its INT8 values in its shape
  at::Tensor scales;  // undefined, or FP32 [elements / last dim, ceil(last dim / 128)]
};

// x as the operator keeps it; `int8` false keeps x itself.
SavedActivation save_activation(const at::Tensor& x, bool int8);

// The tensor back, in `type` (ignored where x was kept as it is).
at::Tensor restore_activation(const SavedActivation& saved, at::ScalarType type);

}  // namespace lpbench::kernels
