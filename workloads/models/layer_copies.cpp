#include "workloads/models/layer_copies.h"

#include <ATen/ops/_foreach_copy.h>

#include "workloads/models/storage.h"

namespace lpbench::workloads {

LayerCopies::LayerCopies(std::vector<std::vector<ComputeCopy>> layers, int64_t recomputed)
    : layers_(std::move(layers)), recomputed_(recomputed) {
  for (int64_t i = 0; i < recomputed_ && i < static_cast<int64_t>(layers_.size()); ++i)
    drop(i);
}

void LayerCopies::make(int64_t layer) {
  if (layer >= recomputed_) return;
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> copies;
  std::vector<torch::Tensor> masters;
  for (ComputeCopy& c : layers_[static_cast<size_t>(layer)]) {
    allocate_storage(c.bf16);
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
