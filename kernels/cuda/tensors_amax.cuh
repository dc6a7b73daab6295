#pragma once

// max |x| of several BF16 tensors in one launch, each into its own amax (FP32 bits, as
// amax.cuh's): a decoder layer's weights, whose tensorwise quantizations then skip their own amax
// passes (kernels/torch/weight_amax.h). One launch where there were a memset and an amax launch a
// weight, and one resident wave walking all of them, where each weight's own grid left its last
// wave's SMs idle (docs/perf-log.md §53).
#include <cuda_runtime.h>

#include <cstdint>

namespace lpbench::cuda {

constexpr int kMaxAmaxTensors = 8;

struct AmaxTensor {
  const void* x;  // BF16, contiguous, 16-byte aligned
  int64_t numel;  // a multiple of 8 (whole 16-byte vectors)
};

// Whether a tensor at `x` of `numel` BF16 elements can be read by tensors_amax.
bool tensors_amax_takes(const void* x, int64_t numel);

// amax[i] = max |tensors[i]| as FP32 bits (a NaN above +Inf), for `count` ≤ kMaxAmaxTensors
// tensors; `amax` (count zeroed uint32 on the device) is folded into with atomics.
void tensors_amax(const AmaxTensor* tensors, int count, uint32_t* amax, cudaStream_t stream);

}  // namespace lpbench::cuda
