#pragma once

#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// The softmax cross-entropy of the output layer's logits, in place: each row of `logits`
// [rows, vocab] (BF16, as the output product writes them) becomes the gradient of the loss
// (summed over rows, then divided by `divisor`) with respect to it, and loss[row] the row's loss:
//   lse       = max + log Σ exp(x − max)                          (FP32)
//   loss[r]   = lse − x[target]
//   x[j]     ← (exp(x[j] − max) · (1/Σ) − [j = target]) / divisor  (FP32, rounded once)
// as kernels/reference/cross_entropy.h defines it. A target outside [0, vocab) gives a NaN loss
// and no −1 in its row. One pass reads a row for its max and sum and keeps what it read in shared
// memory, up to `held_bytes`; a second writes the gradient over the row, reading again from global
// memory only what was not kept (a block an SM walks the rows; docs/perf-log.md §46, §47). Rows
// contiguous; a vocabulary that is a multiple of 8 with 16-byte aligned logits takes 16-byte
// accesses, any other one element at a time.
struct CrossEntropyArgs {
  void* logits = nullptr;            // [rows, vocab] bf16: read, then overwritten by the gradient
  const int64_t* targets = nullptr;  // [rows]
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t divisor = 1;    // the mean's N (the batch's tokens)
  float* loss = nullptr;  // [rows]
  // Shared memory a block keeps of each row between the passes: −1 the most the device allows
  // (on Hopper 224 KiB a block at 512 threads, 112 at 256, 55 at 128), 0 none (the row read twice
  // from global memory, §46's kernel); tests and the bench set it to reach every path.
  int64_t held_bytes = -1;
  // Threads a block: 0 the kernel's choice (the most blocks an SM that hold a whole row each, else
  // one of 512), or 128 (four blocks an SM), 256 (two) or 512 (one), for the tests and the bench.
  int block_threads = 0;
};

void softmax_cross_entropy(const CrossEntropyArgs& args, cudaStream_t stream);

}  // namespace lpbench::cuda
