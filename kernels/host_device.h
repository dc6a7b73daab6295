#pragma once

// LPBENCH_HOST_DEVICE marks a function that the CUDA kernels and the CPU (its reference and its
// tests) both run, so that the two compute the same bits from one definition
// (kernels/rounding_noise.h, kernels/cuda/fast_divmod.cuh). Outside nvcc it is nothing.
#if defined(__CUDACC__)
#define LPBENCH_HOST_DEVICE __host__ __device__
#else
#define LPBENCH_HOST_DEVICE
#endif
