#include "kernels/torch/embedding.h"

#include <ATen/ops/_unique.h>
#include <torch/autograd.h>

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class EmbeddingFunction : public torch::autograd::Function<EmbeddingFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& master,
                            const at::Tensor& tokens, at::ScalarType compute, bool by_rows) {
    ctx->save_for_backward({tokens});
    ctx->saved_data["rows"] = master.size(0);
    ctx->saved_data["master_type"] = static_cast<int64_t>(master.scalar_type());
    ctx->saved_data["by_rows"] = by_rows;
    // Rounded after the gather: the rows' bits are a rounded copy's, for the rows alone.
    return at::embedding(master, tokens).to(compute);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor tokens = ctx->get_saved_variables()[0];
    const auto type = static_cast<at::ScalarType>(ctx->saved_data["master_type"].toInt());
    const int64_t rows = ctx->saved_data["rows"].toInt();
    const at::Tensor d_out = grads[0].to(type);
    // The dense backward (deterministic: it sorts the tokens rather than adding atomically).
    if (!ctx->saved_data["by_rows"].toBool()) {
      const at::Tensor d_master = at::embedding_dense_backward(d_out, tokens, rows,
                                                               /*padding_idx=*/-1,
                                                               /*scale_grad_by_freq=*/false);
      return {d_master, at::Tensor(), at::Tensor(), at::Tensor()};
    }
    // By rows: the same backward over the tokens renumbered by their rank among the distinct
    // ones, which keeps each row's tokens in their order, so each row sums in the same order,
    // to the same bits, into a table of the distinct rows alone.
    const auto [distinct, rank] = at::_unique(tokens.reshape({-1}), /*sorted=*/true,
                                              /*return_inverse=*/true);
    const at::Tensor values =
        at::embedding_dense_backward(d_out, rank.view(tokens.sizes()), distinct.numel(),
                                     /*padding_idx=*/-1, /*scale_grad_by_freq=*/false);
    at::Tensor d_master = at::_sparse_coo_tensor_unsafe(distinct.unsqueeze(0), values,
                                                        {rows, values.size(1)}, values.options());
    d_master._coalesced_(true);  // distinct, sorted rows
    return {d_master, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor embedding(const at::Tensor& master, const at::Tensor& tokens, at::ScalarType compute,
                     bool gradient_by_rows) {
  return EmbeddingFunction::apply(master, tokens, compute, gradient_by_rows);
}

}  // namespace lpbench::kernels
