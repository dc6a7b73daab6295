#pragma once

// lpbench's number formats and torch's dtypes as the CUDA launchers' plain DType: the one place
// the glue translates them (kernels/cuda/types.cuh defines DType without torch).
#ifdef LPBENCH_CUDA_GLUE

#include <c10/util/Exception.h>

#include "kernels/cuda/types.cuh"
#include "kernels/recipe.h"

namespace lpbench::kernels {

// A quantized format's DType; BF16 is no quantized format (`what` names the caller's op).
inline cuda::DType cuda_type(NumberFormat format, const char* what) {
  switch (format) {
    case NumberFormat::int8:
      return cuda::DType::int8;
    case NumberFormat::fp8_e4m3:
      return cuda::DType::fp8_e4m3;
    case NumberFormat::fp8_e5m2:
      return cuda::DType::fp8_e5m2;
    case NumberFormat::bf16:
      break;
  }
  TORCH_CHECK(false, what, ": BF16 is not a quantized format");
}

}  // namespace lpbench::kernels

#endif  // LPBENCH_CUDA_GLUE
