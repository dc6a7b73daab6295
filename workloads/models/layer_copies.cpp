#include "workloads/models/layer_copies.h"

#include <ATen/ops/_foreach_copy.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <optional>

#include "workloads/models/storage.h"

namespace lpbench::workloads {

namespace {

// Each copy starts on a whole 512-byte line of the arena, as the allocator's blocks do: the
// kernels that read them take 16-byte vectors and TMA tiles from their starts.
constexpr int64_t kAlignment = 512;

int64_t bytes_of(const torch::Tensor& t) {
  return t.numel() * static_cast<int64_t>(t.element_size());
}

}  // namespace

LayerCopies::LayerCopies(std::vector<std::vector<ComputeCopy>> layers, int64_t recomputed)
    : layers_(std::move(layers)), recomputed_(recomputed) {
  const int64_t count = std::min(recomputed_, static_cast<int64_t>(layers_.size()));
  int64_t largest = 0;
  std::optional<torch::Device> device;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> offsets;
    int64_t end = 0;
    for (const ComputeCopy& c : layers_[static_cast<size_t>(i)]) {
      offsets.push_back(end);
      end += (bytes_of(c.bf16) + kAlignment - 1) / kAlignment * kAlignment;
      device = c.bf16.device();
    }
    largest = std::max(largest, end);
    offsets_.push_back(std::move(offsets));
  }
  for (int64_t i = 0; i < count; ++i)
    drop(i);
  if (largest > 0) arena_ = torch::empty({largest}, torch::dtype(torch::kUInt8).device(*device));
}

void LayerCopies::make(int64_t layer) {
  if (layer >= recomputed_ || !arena_.defined()) return;
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> copies;
  std::vector<torch::Tensor> masters;
  std::vector<ComputeCopy>& unit = layers_[static_cast<size_t>(layer)];
  for (size_t i = 0; i < unit.size(); ++i) {
    ComputeCopy& c = unit[i];
    c10::StorageImpl* impl = c.bf16.storage().unsafeGetStorageImpl();
    // A view into the arena, which owns the memory: the copy's storage only points at it.
    uint8_t* at =
        static_cast<uint8_t*>(arena_.data_ptr()) + offsets_[static_cast<size_t>(layer)][i];
    impl->set_data_ptr_noswap(c10::DataPtr(at, arena_.device()));
    impl->set_nbytes(static_cast<size_t>(bytes_of(c.bf16)));
    copies.push_back(c.bf16);
    masters.push_back(c.master);
  }
  if (!copies.empty()) at::_foreach_copy_(copies, masters);
}

void LayerCopies::drop(int64_t layer) {
  if (layer >= recomputed_) return;
  for (ComputeCopy& c : layers_[static_cast<size_t>(layer)])
    free_storage(c.bf16);
}

}  // namespace lpbench::workloads
