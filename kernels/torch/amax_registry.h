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

// Forgets `tensor`'s amax where the one remembered is `amax_bits` itself (another remembered
// since is kept).
void forget_amax(const at::Tensor& tensor, const at::Tensor& amax_bits);

// A fresh zeroed amax for a producer to fill, on `like`'s device (on a GPU, eagerly, a word of a
// block zeroed in one launch with several steps' others: see amax_registry.cpp).
at::Tensor new_amax(const at::Tensor& like);

// Every row's max |x|, then every column's, of what a producer wrote, read as a row-major
// [rows, cols] matrix: `line_bits` holds rows + cols int32 (FP32 bits, as amax_bits). A
// quantization per row of the matrix and per row of its transpose (quantize_rowwise_pair) asks
// for them and skips its amax pass. Found again only for a contiguous tensor of the same
// elements read with the same `cols`; recall_amax never returns them.
void remember_line_amax(const at::Tensor& tensor, const at::Tensor& line_bits, int64_t cols);
std::optional<at::Tensor> recall_line_amax(const at::Tensor& tensor, int64_t cols);
at::Tensor new_line_amax(const at::Tensor& like, int64_t rows, int64_t cols);

// Which of an operator's outputs report their lines' amaxes instead of the tensor's: the
// forward's (X, read per row by int8-row) and the backward's (dY, under int8-row and dy=row).
struct LineAmax {
  bool forward = false;
  bool backward = false;
};

// Folds max |written| into `amax_bits`: what a producer's kernel does as it stores, for the
// producer's path that has no kernel (shapes the kernel does not take).
void fold_amax(const at::Tensor& amax_bits, const at::Tensor& written);

}  // namespace lpbench::kernels
