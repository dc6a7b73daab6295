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
// memory only what was not kept (docs/perf-log.md §46–§49). Rows contiguous; a vocabulary that
// is a multiple of 8 with 16-byte aligned logits takes 16-byte accesses, any other one element
// at a time.
struct CrossEntropyArgs {
  void* logits = nullptr;            // [rows, vocab] bf16: read, then overwritten by the gradient
  const int64_t* targets = nullptr;  // [rows]
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t divisor = 1;    // the mean's N (the batch's tokens)
  float* loss = nullptr;  // [rows]
  // Shared memory a block keeps of its slice of each row between the passes: −1 the most the device
  // allows (on Hopper 224 KiB a block at 512 threads, 112 at 256, 55 at 128), 0 none (the row read
  // twice from global memory, §46's kernel); tests and the bench set it to reach every path.
  int64_t held_bytes = -1;
  // Threads a block: 0 the kernel's choice, or 128 (four blocks an SM), 256 (two) or 512 (one),
  // for the tests and the bench.
  int block_threads = 0;
  // Blocks that share each row, as one thread-block cluster (Hopper and later): 1, or 2 (each
  // block takes half of every row of its cluster, holds it in shared memory, and the two blocks'
  // (max, Σ) pairs meet over distributed shared memory; the 16-byte path only: the element path
  // takes 1), or 0 the kernel's choice. With both 0 the kernel takes the most blocks an SM whose
  // shares of shared memory hold a whole row each, else one block of 512 a row by bulk copies, or
  // two blocks of 256 a row by the threads' loads (docs/perf-log.md §47–§49).
  int cluster_blocks = 0;
  // How the held part of each slice comes into shared memory: −1 the kernel's choice (1 where the
  // device has bulk copies, Hopper and later, else 0), 0 each thread's own loads, 1 the copy
  // engine's bulk copies in chunks, the next row's streaming in while this one is written (the
  // 16-byte path only: the element path takes 0; docs/perf-log.md §49).
  int copy_engine = -1;
  // The pieces the copy engine brings each slice's held part in, each waited for on its own: 0 the
  // kernel's choice (2), or 1 to 16.
  int copy_chunks = 0;
  // Whether each thread keeps ten 16-byte vectors of the end that shared memory does not hold in
  // its registers between the passes, so that pass 2 reads them from there (the bulk copies'
  // launch of one block of 512 threads a row only): −1 the kernel's choice (1 where a row does not
  // fit the block's shared memory), 0 no (the unheld end read twice), 1 yes (docs/perf-log.md §50).
  int tail_in_registers = -1;
};

void softmax_cross_entropy(const CrossEntropyArgs& args, cudaStream_t stream);

// The launch that softmax_cross_entropy makes for `args` on the current device.
struct CrossEntropyShape {
  int block_threads = 0;
  int cluster_blocks = 0;
  int copy_engine = 0;        // 1: the held part by bulk copies
  int tail_in_registers = 0;  // 1: part of the unheld end kept in registers
};
CrossEntropyShape softmax_cross_entropy_shape(const CrossEntropyArgs& args);

}  // namespace lpbench::cuda
