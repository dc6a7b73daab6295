#include "kernels/torch/adamw_step.h"

#include <ATen/ops/_fused_adamw.h>

#include <cmath>
#include <cstring>

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/adamw.cuh"
#include "kernels/torch/amax_registry.h"
#endif

namespace lpbench::kernels {

namespace {

// libtorch's fused AdamW, one call per distinct step count (its step tensors are per tensor, but
// a call takes one learning rate, and the counts differ only where an idle expert was skipped).
void reference_step(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                    const std::vector<at::Tensor>& exp_avgs,
                    const std::vector<at::Tensor>& exp_avg_sqs,
                    const std::vector<at::Tensor>& copies, const std::vector<int64_t>& steps,
                    const AdamwHyper& h, const at::Tensor& grad_scale) {
  // libtorch's fused AdamW takes dense gradients: a gradient by rows is made whole here.
  std::vector<at::Tensor> dense(grads.begin(), grads.end());
  for (at::Tensor& g : dense) {
    if (g.is_sparse()) g = g.to_dense();
  }
  std::vector<at::Tensor> step_tensors;
  step_tensors.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    step_tensors.push_back(
        at::full({}, static_cast<double>(steps[i]), params[i].options().dtype(at::kFloat)));
  }
  at::_fused_adamw_(params, dense, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, step_tensors,
                    h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, /*amsgrad=*/false,
                    /*maximize=*/false, grad_scale, /*found_inf=*/{});
  for (size_t i = 0; i < params.size(); ++i) {
    if (copies[i].defined()) copies[i].copy_(params[i]);
  }
}

#ifdef LPBENCH_CUDA_GLUE
// A gradient by rows for the kernel: the row of `values` that holds each of the tensor's rows, or
// −1 ([rows] int32 on the device); kept alive by the caller until the launch is queued.
at::Tensor row_slots(const at::Tensor& grad) {
  TORCH_CHECK(grad.is_coalesced() && grad.sparse_dim() == 1 && grad.dense_dim() == 1,
              "adamw_step: a sparse gradient must be coalesced rows ([rows, width], one index "
              "a row)");
  const at::Tensor rows = grad._indices()[0];
  at::Tensor slots = at::full({grad.size(0)}, -1, rows.options().dtype(at::kInt));
  slots.index_put_({rows}, at::arange(rows.numel(), rows.options().dtype(at::kInt)));
  return slots;
}
#endif

}  // namespace

bool adamw_on_kernel([[maybe_unused]] const at::Device& device) {
#ifdef LPBENCH_CUDA_GLUE
  return device.is_cuda();
#else
  return false;
#endif
}

void adamw_step(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                const std::vector<at::Tensor>& exp_avgs, const std::vector<at::Tensor>& exp_avg_sqs,
                const std::vector<at::Tensor>& copies, const std::vector<int64_t>& steps,
                const AdamwHyper& h, const at::Tensor& grad_scale,
                [[maybe_unused]] bool copy_amax) {
  TORCH_CHECK(grads.size() == params.size() && exp_avgs.size() == params.size() &&
                  exp_avg_sqs.size() == params.size() && copies.size() == params.size() &&
                  steps.size() == params.size(),
              "adamw_step: one gradient, two moments, a copy slot and a step count a tensor");
  if (params.empty()) return;
  if (!adamw_on_kernel(params.front().device())) {
    reference_step(params, grads, exp_avgs, exp_avg_sqs, copies, steps, h, grad_scale);
    return;
  }
#ifdef LPBENCH_CUDA_GLUE
  std::vector<cuda::AdamwTensor> tensors;
  tensors.reserve(params.size());
  // Each copy's max |x|, found by the kernel as it writes the copy, for the tensorwise
  // quantizations of the copy in the next forward (kernels/torch/amax_registry.h).
  int64_t with_copy = 0;
  for (const at::Tensor& c : copies)
    with_copy += copy_amax && c.defined() && c.numel() > 0 ? 1 : 0;
  const at::Tensor amaxes = with_copy > 0
                                ? at::zeros({with_copy}, params.front().options().dtype(at::kInt))
                                : at::Tensor();
  std::vector<size_t> remembered;  // the tensors whose copy has an amax, in slot order
  std::vector<at::Tensor> slots;   // the gradients by rows' row maps, alive until the launch
  for (size_t i = 0; i < params.size(); ++i) {
    const bool by_rows = grads[i].is_sparse();
    const at::Tensor grad = by_rows ? grads[i]._values() : grads[i];
    for (const at::Tensor* t : {&params[i], &grad, &exp_avgs[i], &exp_avg_sqs[i]}) {
      TORCH_CHECK(t->scalar_type() == at::kFloat && t->is_contiguous() &&
                      (t->numel() == params[i].numel() || (t == &grad && by_rows)) &&
                      t->device() == params[i].device(),
                  "adamw_step: tensor ", i, ": FP32, contiguous, one shape and device");
    }
    if (params[i].numel() == 0) continue;
    cuda::AdamwTensor t;
    t.param = params[i].data_ptr<float>();
    t.grad = grad.data_ptr<float>();
    if (by_rows) {
      TORCH_CHECK(grads[i].sizes() == params[i].sizes() && params[i].dim() == 2,
                  "adamw_step: a gradient by rows has its [rows, width] tensor's shape");
      slots.push_back(row_slots(grads[i]));
      t.grad_rows = slots.back().data_ptr<int32_t>();
      t.row_width = params[i].size(1);
    }
    t.exp_avg = exp_avgs[i].data_ptr<float>();
    t.exp_avg_sq = exp_avg_sqs[i].data_ptr<float>();
    if (copies[i].defined()) {
      TORCH_CHECK(copies[i].scalar_type() == at::kBFloat16 && copies[i].is_contiguous() &&
                      copies[i].numel() == params[i].numel(),
                  "adamw_step: copy ", i, ": BF16, contiguous, the master's size");
      t.bf16_copy = copies[i].data_ptr();
      if (copy_amax) {
        t.copy_amax = reinterpret_cast<uint32_t*>(amaxes.data_ptr<int32_t>() + remembered.size());
        remembered.push_back(i);
      }
    }
    t.numel = params[i].numel();
    const auto step = static_cast<double>(steps[i]);
    t.step_size = static_cast<float>(h.lr / (1.0 - std::pow(h.beta1, step)));
    t.bias_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(h.beta2, step)));
    tensors.push_back(t);
  }
  TORCH_CHECK(grad_scale.scalar_type() == at::kFloat && grad_scale.numel() == 1 &&
                  grad_scale.device() == params.front().device(),
              "adamw_step: grad_scale, one FP32 element on the tensors' device");
  const int64_t blocks = cuda::plan_adamw(tensors);
  // The table goes through torch's pinned host allocator, which does not hand the buffer out
  // again before the asynchronous copy from it has run.
  const auto bytes = static_cast<int64_t>(tensors.size() * sizeof(cuda::AdamwTensor));
  at::Tensor staging = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
  std::memcpy(staging.data_ptr(), tensors.data(), static_cast<size_t>(bytes));
  const at::Tensor table =
      at::empty({bytes}, params.front().options().dtype(at::kByte)).copy_(staging, true);
  cuda::AdamwArgs a;
  a.lr = static_cast<float>(h.lr);
  a.beta1 = static_cast<float>(h.beta1);
  a.beta2 = static_cast<float>(h.beta2);
  a.eps = static_cast<float>(h.eps);
  a.weight_decay = static_cast<float>(h.weight_decay);
  a.grad_scale = grad_scale.data_ptr<float>();
  const auto stream = c10::cuda::getCurrentCUDAStream(params.front().device().index());
  cuda::launch_adamw(static_cast<const cuda::AdamwTensor*>(table.data_ptr()),
                     static_cast<int>(tensors.size()), blocks, a, stream.stream());
  for (size_t slot = 0; slot < remembered.size(); ++slot)
    remember_amax(copies[remembered[slot]], amaxes.narrow(0, static_cast<int64_t>(slot), 1));
#endif
}

}  // namespace lpbench::kernels
