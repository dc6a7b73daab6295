#include "kernels/torch/saved_activation.h"

#include "kernels/profiling/range.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/quantize.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/saved_activation.cuh"
#endif

namespace lpbench::kernels {

namespace {

const QuantSpec kSavedSpec{NumberFormat::int8, 1, 128};

}  // namespace

SavedActivation save_activation(const at::Tensor& x, bool int8) {
  if (!int8) return {x, at::Tensor()};
  const profiling::Range range("save int8");
  const int64_t cols = x.size(-1);
  const Quantized q = kernels::quantize(x.reshape({-1, cols}), kSavedSpec);
  return {q.values.view(x.sizes()), q.scales};
}

at::Tensor restore_activation(const SavedActivation& saved, at::ScalarType type) {
  if (!saved.scales.defined()) return saved.values;
  const profiling::Range range("restore int8");
  const int64_t cols = saved.values.size(-1);
#ifdef LPBENCH_CUDA_GLUE
  if (saved.values.is_cuda() && type == at::kBFloat16 && cols % 16 == 0) {
    const at::Tensor values = saved.values.contiguous();
    const at::Tensor scales = saved.scales.contiguous();
    at::Tensor out = at::empty(values.sizes(), values.options().dtype(at::kBFloat16));
    cuda::RestoreInt8Args a;
    a.values = values.data_ptr<int8_t>();
    a.scales = scales.data_ptr<float>();
    a.rows = values.numel() / cols;
    a.cols = cols;
    a.out = out.data_ptr();
    cuda::restore_int8_blocks(a, c10::cuda::getCurrentCUDAStream(values.device().index()).stream());
    return out;
  }
#endif
  const Quantized q{saved.values.reshape({-1, cols}), saved.scales, kSavedSpec};
  return reference::dequantize(q, type).view(saved.values.sizes());
}

bool kernel_keeps_int8(int64_t cols) {
  return cols % kSavedSpec.block_cols == 0;
}

SavedActivation int8_room(const at::Tensor& x) {
  const int64_t cols = x.size(-1);
  return {
      at::empty(x.sizes(), x.options().dtype(at::kChar)),
      at::empty({x.numel() / cols, cols / kSavedSpec.block_cols}, x.options().dtype(at::kFloat))};
}

}  // namespace lpbench::kernels
