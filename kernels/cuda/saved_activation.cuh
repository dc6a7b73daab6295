#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// An activation kept as INT8 in blocks of 128 along its rows, as the element-wise kernels write
// it in their forward and read it in their backward (saved_int8_blocks.cuh), so that neither the
// copy nor its restore is a pass of its own: values [rows, cols], FP32 scales [rows, cols / 128],
// cols a multiple of 128. The bytes are kernels/reference/quantize.h's spec int8 {1, 128}.
constexpr int kSavedBlock = 128;

struct Int8Blocks {  // written
  int8_t* values = nullptr;
  float* scales = nullptr;
};
struct KeptInt8Blocks {  // read
  const int8_t* values = nullptr;
  const float* scales = nullptr;
};

// The launchers' check of such a copy, where one is given (values not null): rows of `cols`
// elements a whole number of blocks, the scales present, the values 8-byte aligned (the kernels'
// accesses). std::invalid_argument naming `who` otherwise.
void check_int8_blocks(const void* values, const void* scales, int64_t cols, const char* who);

// An activation kept as INT8 in blocks of 128 along its rows (saved=int8: values [rows, cols],
// FP32 scales [rows, ceil(cols / 128)]) restored to BF16 in one pass:
//   out[r, c] = bf16_rn(float(values[r, c]) · scales[r, c / 128])
// the reference's arithmetic (kernels/reference/quantize.h, dequantize). cols a multiple of 16,
// pointers 16-byte aligned.
struct RestoreInt8Args {
  const int8_t* values = nullptr;
  const float* scales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  void* out = nullptr;  // [rows, cols] bf16
};

void restore_int8_blocks(const RestoreInt8Args& args, cudaStream_t stream);

}  // namespace lpbench::cuda
