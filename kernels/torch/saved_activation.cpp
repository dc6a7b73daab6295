#include "kernels/torch/saved_activation.h"

#include "kernels/profiling/range.h"
#include "kernels/reference/quantize.h"
#include "kernels/torch/quantize.h"

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
  if (cols % 128 == 0) {
    // The reference's arithmetic (one FP32 product, one rounding) without its full-size copy of
    // the scales.
    const at::Tensor blocks = saved.values.reshape({-1, cols / 128, 128}).to(at::kFloat);
    return (blocks * saved.scales.unsqueeze(-1)).to(type).view(saved.values.sizes());
  }
  const Quantized q{saved.values.reshape({-1, cols}), saved.scales, kSavedSpec};
  return reference::dequantize(q, type).view(saved.values.sizes());
}

}  // namespace lpbench::kernels
