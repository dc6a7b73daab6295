#include "workloads/models/decoder.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "kernels/profiling/range.h"
#include "kernels/torch/embedding.h"
#include "kernels/torch/quantization_batch.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantized_linear.h"
#include "kernels/torch/weight_amax.h"
#include "workloads/models/checkpoint.h"
#include "workloads/models/rope.h"
#include "workloads/models/storage.h"

namespace lpbench::workloads {

namespace {

constexpr double kInitStd = 0.02;
constexpr auto kCompute = torch::kBFloat16;

// Residual projections start smaller, by depth (GPT-2's scheme), so the stream stays O(1).
double residual_std(const ModelConfig& config) {
  return kInitStd / std::sqrt(2.0 * static_cast<double>(config.num_layers));
}

}  // namespace

bool quantizes_by_own_amax(const kernels::Recipe& recipe) {
  for (const kernels::GemmKind kind : kernels::kGemmKinds) {
    const kernels::GemmSpec& spec = recipe.gemms[kind];
    if (spec.quantized() && spec.scaling == kernels::Scaling::tensor && spec.amax_history == 0) {
      return true;
    }
  }
  return false;
}

kernels::LineAmax producer_line_amax(const kernels::Recipe& recipe, bool producer_amax) {
  if (!producer_amax || recipe.saved == kernels::SavedActivations::int8) return {};
  using kernels::GemmKind;
  using kernels::Side;
  const auto use = [&recipe](GemmKind kind, Side side) {
    return kernels::OperandUse{recipe.gemms[kind], kind, side};
  };
  // X: fprop's left operand and, transposed, wgrad's right; dY: dgrad's left and wgrad's left.
  return {kernels::quantized_as_rowwise_pair(use(GemmKind::fprop, Side::lhs),
                                             use(GemmKind::wgrad, Side::rhs)),
          kernels::quantized_as_rowwise_pair(use(GemmKind::dgrad, Side::lhs),
                                             use(GemmKind::wgrad, Side::lhs))};
}

std::string quantizing_producers(const kernels::Recipe& recipe, bool producer_amax, bool moe,
                                 bool rope_backward) {
  if (!producer_amax) return "";
  // SwiGLU quantizes its product's X under delayed scaling only (kernels::quantize.h says why).
  const auto quantizes = [&recipe](const char* product, bool delayed_only = false) {
    const std::optional<kernels::Producible> x =
        kernels::producible_x(kernels::decide(recipe, product, kernels::ModuleKind::linear).gemms);
    return x.has_value() && (x->delayed || !delayed_only);
  };
  std::string names;
  const auto add = [&names](const char* name) {
    names += (names.empty() ? "" : ", ") + std::string(name);
  };
  if (quantizes("layers.0.attention.qkv")) add("the attention norm");
  if (!moe && quantizes("layers.0.mlp.gate_up")) add("the MLP norm");
  if (quantizes(moe ? "layers.0.moe.experts.0.down" : "layers.0.mlp.down", true)) add("SwiGLU");
  // SwiGLU's backward quantizes the gate/up product's dY in the dense MLP, and RoPE's backward the
  // QKV product's where its kernel takes the shapes, both under delayed scaling.
  const auto dy = [&recipe](const char* product) {
    return kernels::producible_dy(
        kernels::decide(recipe, product, kernels::ModuleKind::linear).gemms);
  };
  const std::optional<kernels::Producible> gate_up_dy = dy("layers.0.mlp.gate_up");
  if (!moe && gate_up_dy && gate_up_dy->delayed) add("SwiGLU's backward");
  const std::optional<kernels::Producible> qkv_dy = dy("layers.0.attention.qkv");
  if (rope_backward && qkv_dy && qkv_dy->delayed) add("RoPE's backward");
  return names;
}

bool rope_backward_quantizes(const ModelConfig& model, int64_t seq_len) {
  return !model.qk_norm && kernels::rope_backward_quantization_takes(
                               model.head_dim, model.num_heads, model.num_kv_heads, seq_len);
}

kernels::LinearGemms PrecisionPlan::linear(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::linear));
  return decisions_.back().gemms;
}

void PrecisionPlan::embedding(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::embedding));
}

RecipeLinearImpl::RecipeLinearImpl(int64_t in_features, int64_t out_features,
                                   kernels::LinearGemms gemms, double init_std, std::string name,
                                   torch::Device device, Fusion fusion)
    : gemms_(gemms), name_(std::move(name)), histories_(histories_for(gemms)) {
  weight_ = register_parameter("weight",
                               torch::empty({out_features, in_features}, torch::device(device)));
  torch::nn::init::normal_(weight_, 0.0, init_std);
  if (fusion == Fusion::fused) {
    compute_ = register_buffer("compute_weight", weight_.detach().to(kCompute));
    add_into_grad_ = true;
  }
}

torch::Tensor RecipeLinearImpl::forward(const torch::Tensor& x) {
  if (compute_.defined()) {
    // prequantize_weight's quantization is read by this forward alone.
    kernels::WeightQuantCache once = std::exchange(prequantized_, {});
    return kernels::quantized_linear(x, compute_, gemms_, name_, weight_, histories_.get(),
                                     once.filled ? &once : weight_cache_.get(), add_into_grad_);
  }
  return kernels::quantized_linear(x, weight_.to(kCompute), gemms_, name_, {}, histories_.get(),
                                   weight_cache_.get());
}

kernels::InputQuantization RecipeLinearImpl::input_quantization() const {
  if (!compute_.defined()) return {};
  const std::optional<kernels::Producible> x = kernels::producible_x(gemms_);
  if (!x) return {};
  if (x->delayed) return {&histories_->x, x->spec};
  return {nullptr, x->spec, /*own_amax=*/true};
}

kernels::InputQuantization RecipeLinearImpl::grad_quantization() const {
  if (!compute_.defined()) return {};
  const std::optional<kernels::Producible> dy = kernels::producible_dy(gemms_);
  if (!dy || !dy->delayed) return {};
  return {&histories_->dy, dy->spec};
}

torch::Tensor RecipeLinearImpl::weight_wanting_amax() const {
  const bool cached = weight_cache_ && weight_cache_->filled;
  if (!compute_.defined() || cached || !kernels::forward_quantizes_w_tensorwise(gemms_)) return {};
  return compute_;
}

void RecipeLinearImpl::prequantize_weight(bool with_dgrad) {
  prequantized_.clear();
  if (!compute_.defined() || weight_cache_) return;
  if (auto q = kernels::quantize_weight(compute_, gemms_, with_dgrad))
    prequantized_ = std::move(*q);
}

void RecipeLinearImpl::cache_quantized_weight(bool enabled) {
  weight_cache_ = enabled ? std::make_shared<kernels::WeightQuantCache>() : nullptr;
}

std::shared_ptr<kernels::LinearAmaxHistories> histories_for(const kernels::LinearGemms& gemms) {
  int64_t length = 0;
  for (const kernels::GemmKind kind : kernels::kGemmKinds)
    length = std::max(length, gemms[kind].amax_history);
  return length > 0 ? std::make_shared<kernels::LinearAmaxHistories>(length) : nullptr;
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, const PrecisionPlan& plan)
    : eps_(eps), ops_(plan.ops()) {
  weight_ = register_parameter("weight", torch::ones({dim}, torch::device(plan.device())));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  return ops_.norm(x, weight_, eps_);
}

std::pair<torch::Tensor, torch::Tensor> RMSNormImpl::residual_forward(
    const torch::Tensor& x, const kernels::InputQuantization& consumer) {
  return ops_.residual_norm(x, weight_, eps_, consumer);
}

std::pair<torch::Tensor, torch::Tensor> RMSNormImpl::add_forward(
    const torch::Tensor& x, const torch::Tensor& residual,
    const kernels::InputQuantization& consumer) {
  return ops_.add_norm(x, residual, weight_, eps_, consumer);
}

AttentionImpl::AttentionImpl(const ModelConfig& config, const std::string& prefix,
                             PrecisionPlan& plan)
    : shape_{config.num_heads, config.num_kv_heads, config.head_dim}, ops_(plan.ops()) {
  const int64_t qkv_width = (shape_.heads + 2 * shape_.kv_heads) * shape_.head_dim;
  const Fusion fusion = plan.ops().fusion();
  qkv_ = register_module(
      "qkv", RecipeLinear(config.hidden_size, qkv_width, plan.linear(prefix + ".qkv"), kInitStd,
                          prefix + ".qkv", plan.device(), fusion));
  out_ = register_module("out", RecipeLinear(shape_.heads * shape_.head_dim, config.hidden_size,
                                             plan.linear(prefix + ".out"), residual_std(config),
                                             prefix + ".out", plan.device(), fusion));
  if (config.qk_norm) {
    q_norm_ = register_module("q_norm", RMSNorm(shape_.head_dim, config.norm_eps, plan));
    k_norm_ = register_module("k_norm", RMSNorm(shape_.head_dim, config.norm_eps, plan));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const profiling::Range range("attention");
  const torch::Tensor o =
      ops_.attention(qkv_(x), shape_, cos, sin, q_norm_ ? q_norm_->weight() : torch::Tensor(),
                     k_norm_ ? k_norm_->weight() : torch::Tensor(), q_norm_ ? q_norm_->eps() : 0.0,
                     qkv_->grad_quantization());
  return out_(o);
}

MlpImpl::MlpImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan)
    : ops_(plan.ops()) {
  const Fusion fusion = plan.ops().fusion();
  // Gate and up projections fused into one GEMM, as Megatron's linear_fc1 does.
  gate_up_ =
      register_module("gate_up", RecipeLinear(config.hidden_size, 2 * config.intermediate_size,
                                              plan.linear(prefix + ".gate_up"), kInitStd,
                                              prefix + ".gate_up", plan.device(), fusion));
  down_ = register_module("down", RecipeLinear(config.intermediate_size, config.hidden_size,
                                               plan.linear(prefix + ".down"), residual_std(config),
                                               prefix + ".down", plan.device(), fusion));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  const profiling::Range range("mlp");
  // SwiGLU writes the down projection's quantized X in place of its output where it can.
  return down_(
      ops_.swiglu(gate_up_(x), down_->input_quantization(), gate_up_->grad_quantization()));
}

MoeImpl::MoeImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan)
    : top_k_(config.experts_per_token) {
  router_ = register_module(
      "router",
      RecipeLinear(config.hidden_size, config.num_experts, plan.linear(prefix + ".router"),
                   kInitStd, prefix + ".router", plan.device(), plan.ops().fusion()));
  for (int64_t e = 0; e < config.num_experts; ++e) {
    // torch module names may not hold dots; the recorded module name does.
    experts_.push_back(
        register_module("expert_" + std::to_string(e),
                        Mlp(config, prefix + ".experts." + std::to_string(e), plan)));
  }
  last_load_ = torch::zeros({config.num_experts}, torch::kLong);
}

torch::Tensor MoeImpl::forward(const torch::Tensor& x) {
  const profiling::Range range("moe");
  const int64_t hidden = x.size(-1);
  const int64_t experts = static_cast<int64_t>(experts_.size());
  torch::Tensor tokens = x.reshape({-1, hidden});
  torch::Tensor probs = torch::softmax(router_(tokens).to(torch::kFloat), -1);
  auto [weights, chosen] = probs.topk(top_k_, -1);  // [N, k]
  weights = weights / weights.sum(-1, /*keepdim=*/true);

  // Group the N·k assignments by expert: one sort, and one copy of the counts to the host.
  torch::Tensor flat = chosen.reshape({-1});
  torch::Tensor order = torch::argsort(flat, /*stable=*/true);
  torch::Tensor token_of = torch::div(order, top_k_, "floor");
  torch::Tensor weight_of = weights.reshape({-1}).index_select(0, order);
  last_load_ = torch::bincount(flat, {}, experts).to(torch::kCPU);
  const auto counts = last_load_.accessor<int64_t, 1>();

  torch::Tensor out = torch::zeros_like(tokens);
  int64_t offset = 0;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t count = counts[e];
    if (count == 0) continue;
    torch::Tensor rows = token_of.narrow(0, offset, count);
    torch::Tensor y = experts_[e]->forward(tokens.index_select(0, rows));
    torch::Tensor w = weight_of.narrow(0, offset, count).unsqueeze(1).to(y.scalar_type());
    out.index_add_(0, rows, y * w);
    offset += count;
  }
  return out.view_as(x);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& config, int64_t index, PrecisionPlan& plan)
    : weight_amaxes_(plan.ops().producer_amax()), name_("layers." + std::to_string(index)) {
  const std::string& prefix = name_;
  attention_norm_ =
      register_module("attention_norm", RMSNorm(config.hidden_size, config.norm_eps, plan));
  attention_ = register_module("attention", Attention(config, prefix + ".attention", plan));
  mlp_norm_ = register_module("mlp_norm", RMSNorm(config.hidden_size, config.norm_eps, plan));
  if (config.is_moe()) {
    moe_ = register_module("moe", Moe(config, prefix + ".moe", plan));
  } else {
    mlp_ = register_module("mlp", Mlp(config, prefix + ".mlp", plan));
  }
}

ResidualStream DecoderLayerImpl::forward_stream(const ResidualStream& in, const torch::Tensor& cos,
                                                const torch::Tensor& sin) {
  const profiling::Range range("layer", name_);
  // First, one pass finds every weight's amax that no optimizer step reported (docs/perf-log.md
  // §53). Only on the GPU: the CPU's quantization (the reference) finds its amax itself.
  const kernels::ScopedAmaxes weights(in.h.is_cuda() ? weights_wanting_amax()
                                                     : std::vector<torch::Tensor>{});
  // Then every dense product's weight quantization, before the norm: the GPU works on them
  // (~0.2 ms at llama2-7b) while the host prepares the ops up to the first product, where it
  // idled 242–278 µs of an eager INT8 step (docs/perf-log.md §61, §63). The same bits as each
  // product's own; each forward reads and drops its own. Those by an amax known already go in one
  // launch (kernels::QuantizationBatch: 10 µs and 3 launches fewer a layer, docs/perf-log.md §72).
  if (in.h.is_cuda()) {
    const kernels::QuantizationBatch batch;
    for (RecipeLinearImpl* linear : dense_linears())
      linear->prequantize_weight(torch::GradMode::is_enabled());
  }
  // The previous layer's residual add and this layer's attention norm in one operator, and the
  // attention's residual add and the MLP's norm in another (one pass each, fused); with no add
  // to take, the norm still takes the stream's gradient into its backward. Either way the
  // gradients are the same bits: the add rounds as torch's does, and the norm's backward adds
  // the stream's gradient in FP32 and rounds once. Each norm writes its product's quantized
  // input in place of its output where it can (not before the MoE's router and experts, which
  // all read it).
  const kernels::InputQuantization qkv_input = attention_->input_quantization();
  const auto [x, attention_in] = in.delta.defined()
                                     ? attention_norm_->add_forward(in.h, in.delta, qkv_input)
                                     : attention_norm_->residual_forward(in.h, qkv_input);
  const auto [h, normed] =
      mlp_norm_->add_forward(x, attention_(attention_in, cos, sin),
                             moe_ ? kernels::InputQuantization{} : mlp_->input_quantization());
  return {h, moe_ ? moe_(normed) : mlp_(normed)};
}

std::vector<RecipeLinearImpl*> DecoderLayerImpl::dense_linears() const {
  std::vector<RecipeLinearImpl*> linears;
  for (const torch::nn::Module* block :
       {static_cast<const torch::nn::Module*>(attention_.get()),
        static_cast<const torch::nn::Module*>(mlp_ ? mlp_.get() : nullptr)}) {
    if (block == nullptr) continue;
    for (const auto& module : block->modules(/*include_self=*/false)) {
      if (auto* linear = dynamic_cast<RecipeLinearImpl*>(module.get())) linears.push_back(linear);
    }
  }
  return linears;
}

std::vector<torch::Tensor> DecoderLayerImpl::weights_wanting_amax() const {
  std::vector<torch::Tensor> weights;
  if (!weight_amaxes_) return weights;
  for (const RecipeLinearImpl* linear : dense_linears()) {
    if (torch::Tensor w = linear->weight_wanting_amax(); w.defined()) weights.push_back(w);
  }
  return weights;
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  return forward_stream({x, {}}, cos, sin).sum();
}

DecoderImpl::DecoderImpl(const ModelConfig& config, const kernels::Recipe& recipe,
                         int64_t max_seq_len, torch::Device device, Fusion fusion,
                         bool producer_amax)
    : config_(config), ops_(fusion) {
  PrecisionPlan plan(recipe, device, fusion, producer_amax);
  embedding_ = register_parameter(
      "embedding", torch::empty({config.vocab_size, config.hidden_size}, torch::device(device)));
  torch::nn::init::normal_(embedding_, 0.0, kInitStd);
  // Fused, the lookup reads the FP32 master's rows (kernels/torch/embedding.h): a BF16 copy of
  // the table is kept only where it is the output layer's weight too.
  if (fusion == Fusion::fused && config.tie_embeddings) {
    embedding_compute_ = register_buffer("embedding_compute", embedding_.detach().to(kCompute));
  }
  plan.embedding("embedding");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    layers_.push_back(
        register_module("layers_" + std::to_string(i), DecoderLayer(config, i, plan)));
  }
  final_norm_ = register_module("final_norm", RMSNorm(config.hidden_size, config.norm_eps, plan));
  if (config.tie_embeddings) {
    tied_output_ = plan.linear("output");
    tied_output_histories_ = histories_for(tied_output_);
  } else {
    output_ = register_module(
        "output", RecipeLinear(config.hidden_size, config.vocab_size, plan.linear("output"),
                               kInitStd, "output", plan.device(), fusion));
  }
  auto [cos, sin] = rope_tables(config, max_seq_len);
  rope_cos_ = register_buffer("rope_cos", cos.to(device));
  rope_sin_ = register_buffer("rope_sin", sin.to(device));
  decisions_ = plan.decisions();
}

torch::Tensor DecoderImpl::hidden(const torch::Tensor& tokens) {
  ResidualStream stream{
      ops_.fusion() == Fusion::fused
          ? kernels::embedding(embedding_, tokens, kCompute, embedding_gradient_by_rows_)
          : torch::embedding(embedding_.to(kCompute), tokens),
      {}};
  const bool recording = torch::GradMode::is_enabled() && is_training();
  for (size_t i = 0; i < layers_.size(); ++i) {
    DecoderLayer& layer = layers_[i];
    const auto index = static_cast<int64_t>(i);
    if (recording && index < checkpointed_) {
      DecoderLayerImpl* impl = layer.get();
      const torch::Tensor cos = rope_cos_;
      const torch::Tensor sin = rope_sin_;
      BlockHooks hooks;
      if (hooks_) {
        // The hooks object outlives the step: the decoder holds it.
        ParameterHooks* owner = hooks_.get();
        hooks = {[owner, index] { owner->before_forward(index); },
                 [owner, index] { owner->after_forward(index); },
                 [owner, index] { owner->before_backward(index); },
                 [owner, index] { owner->after_backward(index); }};
      }
      // A recomputed layer keeps one tensor, its input: the stream summed on the way in.
      stream = {checkpointed(
                    [impl, cos, sin](const torch::Tensor& x) { return impl->forward(x, cos, sin); },
                    stream.sum(), std::move(hooks)),
                {}};
    } else {
      if (hooks_ && recording && hooks_->needs_recomputation()) {
        throw std::logic_error(
            "Decoder: training with these parameter hooks needs every layer checkpointed");
      }
      if (hooks_) hooks_->before_forward(index);
      stream = layer->forward_stream(stream, rope_cos_, rope_sin_);
      if (hooks_) hooks_->after_forward(index);
    }
  }
  if (stream.delta.defined()) return final_norm_->add_forward(stream.h, stream.delta).second;
  return final_norm_(stream.h);
}

torch::Tensor DecoderImpl::forward(const torch::Tensor& tokens) {
  const torch::Tensor h = hidden(tokens);
  if (output_) return output_(h);
  if (embedding_compute_.defined()) {
    return kernels::quantized_linear(h, embedding_compute_, tied_output_, "output", embedding_,
                                     tied_output_histories_.get());
  }
  return kernels::quantized_linear(h, embedding_.to(kCompute), tied_output_, "output", {},
                                   tied_output_histories_.get());
}

std::optional<ComputeCopy> DecoderImpl::fusable_output() const {
  const kernels::LinearGemms& gemms = output_ ? output_->gemms() : tied_output_;
  if (gemms.any_quantized()) return std::nullopt;
  if (output_ && output_->compute_weight().defined()) {
    return ComputeCopy{output_->weight(), output_->compute_weight()};
  }
  if (!output_ && embedding_compute_.defined()) {
    return ComputeCopy{embedding_, embedding_compute_};
  }
  return std::nullopt;
}

namespace {

void add_copies(const torch::nn::Module& module, std::vector<ComputeCopy>& copies) {
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (const auto* linear = m->as<RecipeLinearImpl>()) {
      if (linear->compute_weight().defined()) {
        copies.push_back({linear->weight(), linear->compute_weight()});
      }
    }
  }
}

}  // namespace

ParameterUnit DecoderImpl::outer_unit() const {
  ParameterUnit unit;
  unit.parameters.push_back(embedding_);
  if (embedding_compute_.defined()) unit.copies.push_back({embedding_, embedding_compute_});
  unit.parameters.push_back(final_norm_->weight());
  if (output_) {
    unit.parameters.push_back(output_->weight());
    add_copies(*output_, unit.copies);
  }
  return unit;
}

std::vector<ParameterUnit> DecoderImpl::layer_units() const {
  std::vector<ParameterUnit> units;
  for (const DecoderLayer& layer : layers_) {
    ParameterUnit unit;
    unit.parameters = layer->parameters();
    add_copies(*layer, unit.copies);
    units.push_back(std::move(unit));
  }
  return units;
}

std::vector<ComputeCopy> DecoderImpl::compute_copies() const {
  std::vector<ComputeCopy> copies;
  if (embedding_compute_.defined()) copies.push_back({embedding_, embedding_compute_});
  for (const auto& module : modules(/*include_self=*/false)) {
    if (const auto* linear = module->as<RecipeLinearImpl>()) {
      if (linear->compute_weight().defined()) {
        copies.push_back({linear->weight(), linear->compute_weight()});
      }
    }
  }
  return copies;
}

void DecoderImpl::refresh_compute_weights() {
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> masters;
  std::vector<torch::Tensor> copies;
  for (const ComputeCopy& c : compute_copies()) {
    // A copy made where it is used has no memory between uses (layer_copies.h).
    if (storage_freed(c.bf16)) continue;
    masters.push_back(c.master);
    copies.push_back(c.bf16);
  }
  if (!copies.empty()) at::_foreach_copy_(copies, masters);
}

void DecoderImpl::cache_quantized_weights(bool enabled) {
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<RecipeLinearImpl>()) linear->cache_quantized_weight(enabled);
  }
}

void DecoderImpl::add_into_gradients(bool enabled) {
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<RecipeLinearImpl>()) linear->add_into_gradient(enabled);
  }
}

void DecoderImpl::clear_quantized_weights() {
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* linear = module->as<RecipeLinearImpl>()) linear->clear_weight_cache();
  }
}

}  // namespace lpbench::workloads
