#pragma once

#include <cstddef>
#include <cstdint>

namespace lpbench::cuda {

// Launch geometry of the grid-strided kernels (the norms, the q/k norm backward), whose blocks
// each walk many rows. What the runtime says about a kernel does not change while the process
// runs, so each answer is asked once per device and kept: these are called on every launch.

// The blocks of a grid-strided backward over `rows` rows, `rows_per_block` at a time, with
// `threads` threads a block: one wave (2048 threads an SM), fewer where the rows run out. Each
// block then walks several rows, and keeps one partial row per row slot.
int64_t one_wave_blocks(int64_t rows, int rows_per_block, int threads);

// The blocks of `kernel` (with `threads` threads and `smem_bytes` of dynamic shared memory a
// block) that the GPU runs at once, at most `bound` (one_wave_blocks, which sizes the workspace).
int64_t resident_blocks(const void* kernel, int threads, size_t smem_bytes, int64_t bound);

// Lets `kernel` take `bytes` of dynamic shared memory a block (cudaFuncSetAttribute, once per
// device for the largest `bytes` asked).
void allow_dynamic_shared_memory(const void* kernel, size_t bytes);

}  // namespace lpbench::cuda
