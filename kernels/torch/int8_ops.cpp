#include "kernels/torch/int8_ops.h"

#include "kernels/reference/int8_gemm.h"

namespace lpbench::kernels {

namespace {

// torch's stock INT8 GEMM (cuBLASLt without algorithm search or workspace) takes A[M,K] and a
// column-major B[K,N] with M > 16 and K, N multiples of 8; elsewhere the exact reference runs.
bool stock_cuda_int_mm_applies(const at::Tensor& a, const at::Tensor& b) {
  return a.is_cuda() && a.size(0) > 16 && a.size(1) % 8 == 0 && b.size(0) % 8 == 0;
}

}  // namespace

Int8Tensor quantize_int8_tensorwise(const at::Tensor& x) {
  return reference::quantize_int8_tensorwise(x);
}

at::Tensor int8_gemm(const at::Tensor& a, const at::Tensor& b) {
  if (stock_cuda_int_mm_applies(a, b)) {
    return at::_int_mm(a.contiguous(), b.contiguous().t());
  }
  return reference::int8_gemm(a.contiguous(), b.contiguous());
}

at::Tensor int8_gemm_dequantize(const Int8Tensor& a, const Int8Tensor& b, at::ScalarType dtype) {
  return reference::dequantize_int32(int8_gemm(a.values, b.values), a.scale, b.scale, dtype);
}

const char* int8_gemm_backend(const at::Device& device) {
  return device.is_cuda() ? "cuda-torch-int-mm" : "cpu-exact";
}

}  // namespace lpbench::kernels
