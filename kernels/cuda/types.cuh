#pragma once

// Plain types shared by the CUDA kernels and their callers. No torch, no CUDA headers needed to
// include this: the launchers take raw pointers, sizes and a stream.
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace lpbench::cuda {

enum class DType : int32_t { bf16, fp32, int8, fp8_e4m3, fp8_e5m2, int32 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bf16";
    case DType::fp32:
      return "fp32";
    case DType::int8:
      return "int8";
    case DType::fp8_e4m3:
      return "fp8_e4m3";
    case DType::fp8_e5m2:
      return "fp8_e5m2";
    case DType::int32:
      return "int32";
  }
  return "?";
}

// The largest magnitude a quantized format represents (the reference's format_max).
inline float format_max(DType t) {
  return t == DType::int8 ? 127.0F : (t == DType::fp8_e4m3 ? 448.0F : 57344.0F);
}

}  // namespace lpbench::cuda
