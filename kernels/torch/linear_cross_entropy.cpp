#include "kernels/torch/linear_cross_entropy.h"

#include <torch/autograd.h>

#include "kernels/profiling/range.h"
#include "kernels/reference/cross_entropy.h"
#include "kernels/torch/bf16_matmul.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/cross_entropy.cuh"
#endif

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class LinearCrossEntropyFunction : public torch::autograd::Function<LinearCrossEntropyFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& h, const at::Tensor& weight,
                            const at::Tensor& master, const at::Tensor& targets,
                            int64_t chunk_tokens) {
    const profiling::Range range("linear cross-entropy");
    const int64_t n = h.size(0);
    // The logits' gradient, kept for backward (BF16, as the product rounds the logits).
    at::Tensor d_logits;
    at::Tensor loss;
#ifdef LPBENCH_CUDA_GLUE
    if (linear_cross_entropy_on_kernel(h.device()) && h.scalar_type() == at::kBFloat16) {
      // One product for the whole batch, then the kernel turns its logits into their gradient
      // in place: no FP32 chunk, no chunk loop.
      d_logits = matmul_nt(h, weight, h.scalar_type());
      const at::Tensor target = targets.to(at::kLong).contiguous();
      const at::Tensor row_loss = at::empty({n}, h.options().dtype(at::kFloat));
      cuda::CrossEntropyArgs a;
      a.logits = d_logits.data_ptr();
      a.targets = target.data_ptr<int64_t>();
      a.rows = n;
      a.vocab = d_logits.size(1);
      a.divisor = n;
      a.loss = row_loss.data_ptr<float>();
      cuda::softmax_cross_entropy(a, c10::cuda::getCurrentCUDAStream(h.device().index()).stream());
      loss = row_loss.sum();
    }
#endif
    if (!d_logits.defined()) {
      d_logits = at::empty({n, weight.size(0)}, h.options());
      loss = at::zeros({}, h.options().dtype(at::kFloat));
      for (int64_t start = 0; start < n; start += chunk_tokens) {
        const int64_t rows = std::min(chunk_tokens, n - start);
        // Rounded to BF16 as the product is; the reference widens them for the softmax.
        const at::Tensor logits = matmul_nt(h.narrow(0, start, rows), weight, h.scalar_type());
        const reference::CrossEntropyRows chunk =
            reference::softmax_cross_entropy(logits, targets.narrow(0, start, rows), n);
        loss += chunk.loss_sum;
        d_logits.narrow(0, start, rows).copy_(chunk.grad);
      }
    }
    ctx->save_for_backward({h, weight, d_logits});
    ctx->saved_data["master_type"] = static_cast<int64_t>(master.scalar_type());
    return loss / static_cast<double>(n);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const profiling::Range range("linear cross-entropy backward");
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& h = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& d_logits = saved[2];
    // The loss's incoming gradient g (1 from loss.backward(), 1 / k for a mean over k
    // micro-batches) scales the two products through their small sides, h and dh, on the device:
    // a multiply by 1 leaves the bits as they were. Reading g on the host to skip it (§46) made
    // the host wait for the whole forward before it could queue this backward (§47).
    const at::Tensor& g = grads[0];
    const at::Tensor dh = matmul_nt(d_logits, weight.t(), h.scalar_type()).mul_(g);
    const auto master_type = static_cast<at::ScalarType>(ctx->saved_data["master_type"].toInt());
    const at::Tensor dw = matmul_nt(d_logits.t(), (h * g).t(), master_type);
    return {dh, at::Tensor(), dw, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool linear_cross_entropy_on_kernel([[maybe_unused]] const at::Device& device) {
#ifdef LPBENCH_CUDA_GLUE
  return device.is_cuda();
#else
  return false;
#endif
}

at::Tensor linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                const at::Tensor& master, const at::Tensor& targets,
                                int64_t chunk_tokens) {
  TORCH_CHECK(h.dim() == 2 && weight.dim() == 2 && h.size(1) == weight.size(1),
              "linear_cross_entropy: h ", h.sizes(), " and weight ", weight.sizes());
  TORCH_CHECK(targets.numel() == h.size(0), "linear_cross_entropy: ", targets.numel(),
              " targets for ", h.size(0), " tokens");
  return LinearCrossEntropyFunction::apply(h, weight, master, targets.reshape({-1}), chunk_tokens);
}

}  // namespace lpbench::kernels
