#include "kernels/torch/embedding.h"

#include <torch/autograd.h>

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class EmbeddingFunction : public torch::autograd::Function<EmbeddingFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& weight,
                            const at::Tensor& master, const at::Tensor& tokens) {
    ctx->save_for_backward({tokens});
    ctx->saved_data["rows"] = master.size(0);
    ctx->saved_data["master_type"] = static_cast<int64_t>(master.scalar_type());
    return at::embedding(weight, tokens);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor tokens = ctx->get_saved_variables()[0];
    const auto type = static_cast<at::ScalarType>(ctx->saved_data["master_type"].toInt());
    // The dense backward (deterministic: it sorts the tokens rather than adding atomically).
    const at::Tensor d_master = at::embedding_dense_backward(
        grads[0].to(type), tokens, ctx->saved_data["rows"].toInt(), /*padding_idx=*/-1,
        /*scale_grad_by_freq=*/false);
    return {at::Tensor(), d_master, at::Tensor()};
  }
};

}  // namespace

at::Tensor embedding(const at::Tensor& weight, const at::Tensor& master, const at::Tensor& tokens) {
  return EmbeddingFunction::apply(weight, master, tokens);
}

}  // namespace lpbench::kernels
