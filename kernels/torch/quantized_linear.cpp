#include "kernels/torch/quantized_linear.h"

#include <torch/autograd.h>

#include <tuple>
#include <utility>

#include "kernels/profiling/range.h"
#include "kernels/torch/gemm.h"
#include "kernels/torch/operand_diagnostics.h"
#include "kernels/torch/quantize.h"

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// GemmSpecs and QuantSpecs travel through the autograd context as integers.
std::vector<int64_t> encode(const GemmSpec& s) {
  return {static_cast<int64_t>(s.lhs),
          static_cast<int64_t>(s.rhs),
          static_cast<int64_t>(s.scaling),
          s.amax_history,
          static_cast<int64_t>(s.lhs_scaling),
          static_cast<int64_t>(s.lhs_rounding),
          s.hadamard_block,
          s.k_block};
}
GemmSpec decode(const std::vector<int64_t>& v, double ratio) {
  return {static_cast<NumberFormat>(v.at(0)),
          static_cast<NumberFormat>(v.at(1)),
          static_cast<Scaling>(v.at(2)),
          ratio,
          v.at(3),
          static_cast<Scaling>(v.at(4)),
          static_cast<Rounding>(v.at(5)),
          v.at(6),
          v.at(7)};
}

// The delayed-scaling state travels through the autograd context as an address.
LinearAmaxHistories* histories_of(AutogradContext* ctx) {
  return reinterpret_cast<LinearAmaxHistories*>(ctx->saved_data["histories"].toInt());
}
AmaxHistory* history(LinearAmaxHistories* h, AmaxHistory LinearAmaxHistories::*which) {
  return h != nullptr ? &(h->*which) : nullptr;
}

// The operand as the GEMM `direct` reads it and, when `transposed_too`, transposed as
// `transposed` reads it; both from one quantization where that is exact (prepare_operand_pair).
std::pair<GemmOperand, GemmOperand> prepare_uses(const at::Tensor& source, const OperandUse& direct,
                                                 const OperandUse& transposed, bool transposed_too,
                                                 AmaxHistory* history) {
  if (transposed_too) return prepare_operand_pair(source, direct, transposed, history);
  return {prepare_operand(source, direct.spec, direct.kind, direct.side, false, history),
          GemmOperand{}};
}

void save_operand(const GemmOperand& op, std::vector<at::Tensor>& tensors,
                  std::vector<int64_t>& spec) {
  if (op.q) {
    tensors.push_back(op.q->values);
    tensors.push_back(op.q->scales);
    spec.insert(spec.end(), {1, static_cast<int64_t>(op.q->spec.format), op.q->spec.block_rows,
                             op.q->spec.block_cols});
  } else {
    tensors.push_back(op.bf16);
    tensors.emplace_back();
    spec.insert(spec.end(), {0, 0, 0, 0});
  }
}

GemmOperand load_operand(const variable_list& tensors, size_t at, const std::vector<int64_t>& spec,
                         size_t spec_at) {
  GemmOperand op;
  if (spec.at(spec_at) == 1) {
    op.q = Quantized{tensors.at(at),
                     tensors.at(at + 1),
                     {static_cast<NumberFormat>(spec.at(spec_at + 1)), spec.at(spec_at + 2),
                      spec.at(spec_at + 3)}};
  } else {
    op.bf16 = tensors.at(at);
  }
  return op;
}

// Whether the forward reads W's quantization from a WeightQuantCache: some product reads W
// quantized, and W's scales follow no amax history (delayed scaling updates the history at every
// quantization).
bool weight_cacheable(const LinearGemms& gemms) {
  const bool quantized =
      gemms.fprop.rhs != NumberFormat::bf16 || gemms.dgrad.rhs != NumberFormat::bf16;
  return quantized && gemms.fprop.amax_history == 0 && gemms.dgrad.amax_history == 0;
}

// Under requantize_w, backward makes dgrad's quantized W again from w instead (the same bits:
// nearest rounding, no history, w unchanged until the optimizer runs).
bool w_again(const LinearGemms& gemms) {
  return gemms.requantize_w && gemms.dgrad.quantized();
}

// W as fprop reads it and, where `with_dgrad`, transposed as dgrad reads it: what the forward
// quantizes and a WeightQuantCache keeps.
std::pair<GemmOperand, GemmOperand> prepare_weight(const at::Tensor& w, const LinearGemms& gemms,
                                                   bool with_dgrad, AmaxHistory* history) {
  return prepare_uses(w, {gemms.fprop, GemmKind::fprop, Side::rhs},
                      {gemms.dgrad, GemmKind::dgrad, Side::rhs}, with_dgrad, history);
}

// The quantization diagnostics of a sampled step (operand_diagnostics.h); nothing otherwise.
// `source` is the operand in its quantization's coordinates.
void diagnose(const std::string& module, GemmKind kind, const char* operand,
              const at::Tensor& source, const GemmOperand& op, const GemmSpec& spec, Side side) {
  // A rotated operand's quantization is of its rotation, not of `source`.
  if (!op.q || !operand_diagnostics() || spec.hadamard_block > 0) return;
  const bool fallback = side == Side::lhs && spec.scaling == Scaling::fallback;
  record_operand(module, kind, operand, source, *op.q, fallback ? spec.outlier_ratio : 0.0);
}

// The master's gradient for the wgrad product to add into, where the forward asked for that and
// there is one to add into (defined, contiguous, the master's shape, in the product's type);
// undefined otherwise, and whenever the backward itself is being differentiated.
at::Tensor gradient_to_add_into(AutogradContext* ctx, at::ScalarType type) {
  const auto found = ctx->saved_data.find("add_into");
  if (found == ctx->saved_data.end() || at::GradMode::is_enabled()) return {};
  const at::Tensor master = found->second.toTensor();
  at::Tensor grad = master.grad();
  if (!grad.defined() || grad.scalar_type() != type || type != at::kFloat ||
      !grad.is_contiguous() || grad.sizes() != master.sizes() || grad.device() != master.device()) {
    return {};
  }
  return grad;
}

class QuantizedLinearFunction : public torch::autograd::Function<QuantizedLinearFunction> {
 public:
  // `grad_target` receives the weight's gradient: `w` itself, or the FP32 master it copies.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& grad_target, const LinearGemms& gemms,
                            const std::string& module, LinearAmaxHistories* histories,
                            WeightQuantCache* weight_cache, bool add_into_grad) {
    const profiling::Range range("linear", module);
    const int64_t k = x.size(-1);
    TORCH_CHECK(w.dim() == 2 && w.size(1) == k, "quantized_linear: X is ", x.sizes(), " but W is ",
                w.sizes());
    const at::Tensor x2 = x.reshape({-1, k});

    // X serves fprop and, transposed, wgrad; W fprop and, transposed, dgrad. What backward
    // needs is prepared now, in the format and layout it will use.
    const bool need_w = grad_target.requires_grad();
    const bool delayed = gemms.fprop.amax_history > 0 || gemms.dgrad.amax_history > 0 ||
                         gemms.wgrad.amax_history > 0;
    TORCH_CHECK(!delayed || histories != nullptr, "quantized_linear: ", module,
                "'s recipe scales by an amax history (delayed scaling) but no history was given");
    const auto [a, wgrad_rhs] = prepare_uses(x2, {gemms.fprop, GemmKind::fprop, Side::lhs},
                                             {gemms.wgrad, GemmKind::wgrad, Side::rhs}, need_w,
                                             history(histories, &LinearAmaxHistories::x));
    const bool again = w_again(gemms);
    const bool want_dgrad = x.requires_grad() && !again;
    const bool cacheable = weight_cache != nullptr && weight_cacheable(gemms);
    GemmOperand b;
    GemmOperand dgrad_rhs;
    if (cacheable && weight_cache->filled && (!want_dgrad || weight_cache->has_dgrad)) {
      b = weight_cache->fprop;
      if (want_dgrad) dgrad_rhs = weight_cache->dgrad;
    } else {
      std::tie(b, dgrad_rhs) =
          prepare_weight(w, gemms, want_dgrad, history(histories, &LinearAmaxHistories::w));
      if (cacheable) *weight_cache = {true, want_dgrad, b, dgrad_rhs};
    }
    if (again && x.requires_grad()) dgrad_rhs = GemmOperand{w, std::nullopt};
    at::Tensor y = gemm_nt(a, b, gemms.fprop, x.scalar_type(), GemmKind::fprop, module);
    diagnose(module, GemmKind::fprop, "x", x2, a, gemms.fprop, Side::lhs);
    diagnose(module, GemmKind::fprop, "w", w, b, gemms.fprop, Side::rhs);
    if (x.requires_grad() && !again) {
      diagnose(module, GemmKind::dgrad, "w", w.t(), dgrad_rhs, gemms.dgrad, Side::rhs);
    }
    if (need_w) {
      diagnose(module, GemmKind::wgrad, "x", x2.t(), wgrad_rhs, gemms.wgrad, Side::rhs);
    }
    std::vector<at::Tensor> tensors;
    std::vector<int64_t> specs;
    save_operand(dgrad_rhs, tensors, specs);
    save_operand(wgrad_rhs, tensors, specs);
    ctx->save_for_backward(tensors);
    ctx->saved_data["specs"] = specs;
    ctx->saved_data["dgrad"] = encode(gemms.dgrad);
    ctx->saved_data["wgrad"] = encode(gemms.wgrad);
    ctx->saved_data["ratio"] = gemms.dgrad.outlier_ratio;
    ctx->saved_data["x_sizes"] = x.sizes();
    ctx->saved_data["module"] = module;
    ctx->saved_data["need_x"] = x.requires_grad();
    ctx->saved_data["need_w"] = need_w;
    ctx->saved_data["w_grad_type"] = static_cast<int64_t>(grad_target.scalar_type());
    ctx->saved_data["master"] = !grad_target.is_same(w);
    // The master itself, only to add into its gradient (a leaf: no cycle through the graph).
    if (add_into_grad && need_w && !grad_target.is_same(w)) {
      ctx->saved_data["add_into"] = grad_target;
    }
    ctx->saved_data["histories"] = reinterpret_cast<int64_t>(histories);

    std::vector<int64_t> out_sizes = x.sizes().vec();
    out_sizes.back() = w.size(0);
    return y.view(out_sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const std::string& name = ctx->saved_data["module"].toStringRef();
    const profiling::Range range("linear backward", name);
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<int64_t> specs = ctx->saved_data["specs"].toIntVector();
    const double ratio = ctx->saved_data["ratio"].toDouble();
    const GemmSpec dgrad = decode(ctx->saved_data["dgrad"].toIntVector(), ratio);
    const GemmSpec wgrad = decode(ctx->saved_data["wgrad"].toIntVector(), ratio);
    const std::vector<int64_t> x_sizes = ctx->saved_data["x_sizes"].toIntVector();
    const std::string module = ctx->saved_data["module"].toStringRef();

    const at::Tensor& grad_y = grad_outputs[0];
    // A producer's stand-in (its quantization waits for this backward) is taken as it is.
    const at::Tensor flat = grad_y.reshape({-1, grad_y.size(-1)});
    const at::Tensor g2 = is_quantized_stand_in(flat) ? flat : flat.contiguous();
    const at::ScalarType dtype = grad_y.scalar_type();

    const bool need_x = ctx->saved_data["need_x"].toBool();
    const bool need_w = ctx->saved_data["need_w"].toBool();
    // dY serves dgrad and, transposed, wgrad.
    const OperandUse dgrad_use{dgrad, GemmKind::dgrad, Side::lhs};
    const OperandUse wgrad_use{wgrad, GemmKind::wgrad, Side::lhs};
    GemmOperand dgrad_lhs;
    GemmOperand wgrad_lhs;
    AmaxHistory* dy_history = history(histories_of(ctx), &LinearAmaxHistories::dy);
    if (need_x) {
      std::tie(dgrad_lhs, wgrad_lhs) = prepare_uses(g2, dgrad_use, wgrad_use, need_w, dy_history);
    } else if (need_w) {
      wgrad_lhs =
          prepare_operand(g2, wgrad, GemmKind::wgrad, Side::lhs, /*transpose=*/true, dy_history);
    }
    at::Tensor grad_x;
    at::Tensor grad_w;
    if (need_x) {
      // dX[M,K] = dY[M,N] · (Wᵀ[K,N])ᵀ
      diagnose(module, GemmKind::dgrad, "dy", g2, dgrad_lhs, dgrad, Side::lhs);
      GemmOperand w_operand = load_operand(saved, 0, specs, 0);
      if (dgrad.quantized() && !w_operand.q) {
        // requantize_w: w was saved as it is.
        w_operand = prepare_operand(w_operand.bf16, dgrad, GemmKind::dgrad, Side::rhs,
                                    /*transpose=*/true, nullptr);
      }
      grad_x = gemm_nt(dgrad_lhs, w_operand, dgrad, dtype, GemmKind::dgrad, module).view(x_sizes);
    }
    if (need_w) {
      // dW[N,K] = dYᵀ[N,M] · (Xᵀ[K,M])ᵀ
      diagnose(module, GemmKind::wgrad, "dy", g2.t(), wgrad_lhs, wgrad, Side::lhs);
      const auto w_type = static_cast<at::ScalarType>(ctx->saved_data["w_grad_type"].toInt());
      const GemmOperand x_operand = load_operand(saved, 2, specs, 4);
      at::Tensor into = gradient_to_add_into(ctx, w_type);
      if (into.defined()) {
        gemm_nt_add(wgrad_lhs, x_operand, wgrad, into, GemmKind::wgrad, module);
      } else {
        grad_w = gemm_nt(wgrad_lhs, x_operand, wgrad, w_type, GemmKind::wgrad, module);
      }
    }
    if (ctx->saved_data["master"].toBool()) {
      return {grad_x,       at::Tensor(), grad_w,       at::Tensor(),
              at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    return {grad_x,       grad_w,       at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool forward_quantizes_w_tensorwise(const LinearGemms& gemms) {
  const auto tensorwise = [](const GemmSpec& spec, GemmKind kind) {
    if (spec.rhs == NumberFormat::bf16 || spec.scaling == Scaling::none ||
        spec.hadamard_block > 0 || spec.amax_history > 0) {
      return false;
    }
    const QuantSpec q = operand_spec(spec, kind, Side::rhs);
    return q.block_rows == 0 && q.block_cols == 0;
  };
  // Under requantize_w, dgrad's W is quantized in backward, after the forward.
  return tensorwise(gemms.fprop, GemmKind::fprop) ||
         (!gemms.requantize_w && tensorwise(gemms.dgrad, GemmKind::dgrad));
}

std::optional<Producible> producible_x(const LinearGemms& gemms) {
  const GemmSpec& fprop = gemms.fprop;
  const GemmSpec& wgrad = gemms.wgrad;
  if (!fprop.quantized() || fprop.hadamard_block > 0 || fprop.scaling == Scaling::fallback ||
      !layout_sharing()) {
    return std::nullopt;
  }
  // A current scale where another product keeps a history: the linear hands X's history (made
  // for any product's) to X's quantization, which would then not be the one the producer made.
  const bool delayed = fprop.amax_history > 0;
  if (!delayed && (gemms.dgrad.amax_history > 0 || wgrad.amax_history > 0)) return std::nullopt;
  const QuantSpec spec = operand_spec(fprop, GemmKind::fprop, Side::lhs);
  if (spec.block_rows != 0 || spec.block_cols != 0 || spec.rounding != Rounding::nearest) {
    return std::nullopt;
  }
  // wgrad reads Xᵀ from the same quantization (prepare_operand_pair), or not at all in BF16.
  if (wgrad.rhs == NumberFormat::bf16 || wgrad.hadamard_block > 0 ||
      !(operand_spec(wgrad, GemmKind::wgrad, Side::rhs) == spec)) {
    return std::nullopt;
  }
  return Producible{spec, delayed};
}

std::optional<Producible> producible_dy(const LinearGemms& gemms) {
  const GemmSpec& dgrad = gemms.dgrad;
  const GemmSpec& wgrad = gemms.wgrad;
  const auto direct = [](const GemmSpec& s) {
    return s.quantized() && s.hadamard_block == 0 && s.scaling != Scaling::fallback;
  };
  if (!direct(dgrad) || !direct(wgrad) || !layout_sharing()) return std::nullopt;
  // Both products read dY's one quantization, under the linear's dY history or under none.
  const bool delayed = dgrad.amax_history > 0;
  if (delayed != (wgrad.amax_history > 0)) return std::nullopt;
  const QuantSpec spec = operand_spec(dgrad, GemmKind::dgrad, Side::lhs);
  if (spec.block_rows != 0 || spec.block_cols != 0 || spec.rounding != Rounding::nearest ||
      !(operand_spec(wgrad, GemmKind::wgrad, Side::lhs) == spec)) {
    return std::nullopt;
  }
  return Producible{spec, delayed};
}

std::optional<WeightQuantCache> quantize_weight(const at::Tensor& w, const LinearGemms& gemms,
                                                bool with_dgrad) {
  if (!weight_cacheable(gemms)) return std::nullopt;
  const bool dgrad = with_dgrad && !w_again(gemms);
  const auto [fprop, dgrad_rhs] = prepare_weight(w, gemms, dgrad, nullptr);
  return WeightQuantCache{true, dgrad, fprop, dgrad_rhs};
}

at::Tensor quantized_linear(const at::Tensor& x, const at::Tensor& w, const LinearGemms& gemms,
                            const std::string& module, const at::Tensor& master,
                            LinearAmaxHistories* histories, WeightQuantCache* weight_cache,
                            bool add_into_grad) {
  if (master.defined()) {
    TORCH_CHECK(master.sizes() == w.sizes(), "quantized_linear: master ", master.sizes(),
                " is not the shape of w ", w.sizes());
    return QuantizedLinearFunction::apply(x, w, master, gemms, module, histories, weight_cache,
                                          add_into_grad);
  }
  return QuantizedLinearFunction::apply(x, w, w, gemms, module, histories, weight_cache,
                                        add_into_grad);
}

}  // namespace lpbench::kernels
