#pragma once

#include <torch/torch.h>

namespace lpbench::workloads {

// A buffer's memory is given back and taken again while its tensor, and every tensor viewing
// it, keeps its identity and shape (what FSDP does with storage().resize_()): the modules, and
// autograd's records of the parameters, never see the swap. The CUDA caching allocator orders
// reuse on the allocating stream, so memory freed while queued kernels still read it is not
// handed out before they ran.
void free_storage(torch::Tensor& tensor);
// Takes the memory back where it was given back; a tensor that holds its memory keeps it.
void allocate_storage(torch::Tensor& tensor);
// Whether the tensor's memory is given back.
bool storage_freed(const torch::Tensor& tensor);

}  // namespace lpbench::workloads
