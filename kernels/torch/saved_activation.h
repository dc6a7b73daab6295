#pragma once

#include <ATen/ATen.h>

#ifdef LPBENCH_CUDA_GLUE
#include "kernels/cuda/saved_activation.cuh"
#endif

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

// Whether a kernel that holds x's rows writes and reads the INT8 copy itself (the norms and
// SwiGLU on the GPU: kernels/cuda/saved_int8_blocks.cuh), so that neither save_activation nor
// restore_activation runs: x's rows (its last dimension) a whole number of blocks.
bool kernel_keeps_int8(int64_t cols);

// Room for x's INT8 copy, for such a kernel to fill: values like x, scales [rows, cols / 128].
SavedActivation int8_room(const at::Tensor& x);

#ifdef LPBENCH_CUDA_GLUE
// The kernels' view of an INT8 copy (contiguous values and scales).
inline cuda::Int8Blocks blocks_of(const SavedActivation& s) {
  return {s.values.data_ptr<int8_t>(), s.scales.data_ptr<float>()};
}
inline cuda::KeptInt8Blocks kept_blocks_of(const SavedActivation& s) {
  return {s.values.data_ptr<int8_t>(), s.scales.data_ptr<float>()};
}
#endif

}  // namespace lpbench::kernels
