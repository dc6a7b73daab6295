#pragma once

#include <ATen/ATen.h>

#include <optional>

// The max |x| a producing kernel reported for the tensor it wrote (kernels/cuda/amax.cuh), kept
// until a tensorwise quantization of that tensor asks for it (kernels/torch/gemm.cpp), which then
// skips its own pass over the tensor to find it.
//
// A tensor is recognized by its storage (held weakly, so that an entry of a freed tensor never
// matches a new one at the same address), its offset, its element count and its version (an
// in-place change forgets the amax); a view that covers the same elements densely (a reshape,
// a transpose) matches too.
namespace lpbench::kernels {

// `amax_bits`: a one-element int32 device tensor holding the bits of max |x| as an FP32.
void remember_amax(const at::Tensor& tensor, const at::Tensor& amax_bits);
std::optional<at::Tensor> recall_amax(const at::Tensor& tensor);

// A fresh zeroed amax for a producer to fill, on `like`'s device.
at::Tensor new_amax(const at::Tensor& like);

// Folds max |written| into `amax_bits`: what a producer's kernel does as it stores, for the
// producer's path that has no kernel (shapes the kernel does not take).
void fold_amax(const at::Tensor& amax_bits, const at::Tensor& written);

}  // namespace lpbench::kernels
