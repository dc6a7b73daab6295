#include "kernels/torch/quantized_linear.h"

#include <torch/autograd.h>

#include "kernels/torch/gemm.h"

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// GemmSpecs travel through the autograd context as integers.
int64_t encode(const GemmSpec& spec) {
  return static_cast<int64_t>(spec.format) * 16 + static_cast<int64_t>(spec.scaling);
}
GemmSpec decode(int64_t code) {
  return {static_cast<NumberFormat>(code / 16), static_cast<Scaling>(code % 16)};
}

using Operand = GemmOperand;

Operand prepare(const at::Tensor& t, const GemmSpec& spec) {
  return prepare_operand(t, spec);
}

class QuantizedLinearFunction : public torch::autograd::Function<QuantizedLinearFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const LinearGemms& gemms) {
    const int64_t k = x.size(-1);
    const int64_t n = w.size(0);
    TORCH_CHECK(w.dim() == 2 && w.size(1) == k, "quantized_linear: X is ", x.sizes(), " but W is ",
                w.sizes());
    at::Tensor x2 = x.reshape({-1, k});

    // Quantize each operand at most once per spec it is used under.
    Operand x_f = prepare(x2, gemms.fprop);
    Operand w_f = prepare(w, gemms.fprop);
    at::Tensor y = gemm_nt(x_f, w_f, gemms.fprop, x.scalar_type());

    // Keep what backward needs, in the format it will be used in.
    Operand w_d = gemms.dgrad == gemms.fprop ? w_f : prepare(w, gemms.dgrad);
    Operand x_w = gemms.wgrad == gemms.fprop ? x_f : prepare(x2, gemms.wgrad);
    if (!x.requires_grad()) w_d = {};
    if (!w.requires_grad()) x_w = {};
    ctx->save_for_backward({w_d.values, w_d.scale, x_w.values, x_w.scale});
    ctx->saved_data["dgrad"] = encode(gemms.dgrad);
    ctx->saved_data["wgrad"] = encode(gemms.wgrad);
    ctx->saved_data["x_sizes"] = x.sizes();

    std::vector<int64_t> out_sizes = x.sizes().vec();
    out_sizes.back() = n;
    return y.view(out_sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const Operand w_d{saved[0], saved[1]};
    const Operand x_w{saved[2], saved[3]};
    const GemmSpec dgrad = decode(ctx->saved_data["dgrad"].toInt());
    const GemmSpec wgrad = decode(ctx->saved_data["wgrad"].toInt());
    const std::vector<int64_t> x_sizes = ctx->saved_data["x_sizes"].toIntVector();

    const at::Tensor& grad_y = grad_outputs[0];
    const at::Tensor g2 = grad_y.reshape({-1, grad_y.size(-1)}).contiguous();
    const at::ScalarType dtype = grad_y.scalar_type();

    at::Tensor grad_x;
    at::Tensor grad_w;
    // dY is quantized once when both backward GEMMs share its spec.
    const Operand g_d = w_d.values.defined() ? prepare(g2, dgrad) : Operand{};
    if (w_d.values.defined()) {
      // dX[M,K] = dY[M,N] · W[N,K] = dY · (Wᵀ)ᵀ
      grad_x = gemm_nt(g_d, transposed(w_d), dgrad, dtype).view(x_sizes);
    }
    if (x_w.values.defined()) {
      // dW[N,K] = dYᵀ[N,M] · X[M,K] = dYᵀ · (Xᵀ)ᵀ
      const Operand g_w = (g_d.values.defined() && dgrad == wgrad) ? g_d : prepare(g2, wgrad);
      grad_w = gemm_nt(transposed(g_w), transposed(x_w), wgrad, dtype);
    }
    return {grad_x, grad_w, at::Tensor()};
  }
};

}  // namespace

at::Tensor quantized_linear(const at::Tensor& x, const at::Tensor& w, const LinearGemms& gemms) {
  return QuantizedLinearFunction::apply(x, w, gemms);
}

}  // namespace lpbench::kernels
