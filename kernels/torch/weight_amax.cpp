#include "kernels/torch/weight_amax.h"

#include "kernels/profiling/range.h"
#include "kernels/torch/amax_registry.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/tensors_amax.cuh"
#endif

namespace lpbench::kernels {

namespace {

#ifdef LPBENCH_CUDA_GLUE
bool on_kernel(const at::Tensor& t, const at::Device& device) {
  return t.is_cuda() && t.device() == device && t.scalar_type() == at::kBFloat16 &&
         t.is_contiguous() && cuda::tensors_amax_takes(t.data_ptr(), t.numel());
}
#endif

}  // namespace

at::Tensor tensors_amax(const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK(!tensors.empty(), "tensors_amax: no tensors");
  const at::Tensor amax =
      at::zeros({static_cast<int64_t>(tensors.size())}, tensors.front().options().dtype(at::kInt));
#ifdef LPBENCH_CUDA_GLUE
  std::vector<cuda::AmaxTensor> batch;
  std::vector<int64_t> slots;
  const auto launch = [&] {
    if (batch.empty()) return;
    // The slots of one batch are consecutive: the kernel writes amax[first + i].
    auto* out = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>() + slots.front());
    cuda::tensors_amax(batch.data(), static_cast<int>(batch.size()), out,
                       c10::cuda::getCurrentCUDAStream(amax.device().index()).stream());
    batch.clear();
    slots.clear();
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const auto slot = static_cast<int64_t>(i);
    if (on_kernel(t, amax.device())) {
      if (!slots.empty() && (slots.back() != slot - 1 ||
                             batch.size() == static_cast<size_t>(cuda::kMaxAmaxTensors))) {
        launch();
      }
      batch.push_back({t.data_ptr(), t.numel()});
      slots.push_back(slot);
      continue;
    }
    launch();
    fold_amax(amax.narrow(0, slot, 1), t.to(amax.device()));
  }
  launch();
#else
  for (size_t i = 0; i < tensors.size(); ++i)
    fold_amax(amax.narrow(0, static_cast<int64_t>(i), 1), tensors[i].to(amax.device()));
#endif
  return amax;
}

ScopedAmaxes::ScopedAmaxes(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> missing;
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t.numel() > 0 && !recall_amax(t)) missing.push_back(t);
  }
  if (missing.empty()) return;
  const profiling::Range range("quantize", "weight amax");
  const at::Tensor amax = tensors_amax(missing);
  for (size_t i = 0; i < missing.size(); ++i) {
    at::Tensor bits = amax.narrow(0, static_cast<int64_t>(i), 1);
    remember_amax(missing[i], bits);
    remembered_.emplace_back(missing[i], std::move(bits));
  }
}

ScopedAmaxes::~ScopedAmaxes() {
  for (const auto& [tensor, bits] : remembered_)
    forget_amax(tensor, bits);
}

}  // namespace lpbench::kernels
