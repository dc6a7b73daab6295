#include "workloads/models/storage.h"

#include <c10/core/StorageImpl.h>

namespace lpbench::workloads {

void free_storage(torch::Tensor& tensor) {
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(c10::DataPtr(nullptr, impl->device()));
  impl->set_nbytes(0);
}

void allocate_storage(torch::Tensor& tensor) {
  c10::StorageImpl* impl = tensor.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(tensor.numel()) * tensor.element_size();
  if (impl->nbytes() == bytes) return;
  impl->set_data_ptr_noswap(impl->allocator()->allocate(bytes));
  impl->set_nbytes(bytes);
}

bool storage_freed(const torch::Tensor& tensor) {
  return tensor.numel() > 0 && tensor.storage().nbytes() == 0;
}

}  // namespace lpbench::workloads
