#pragma once

#include <torch/torch.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/recipe.h"
#include "kernels/torch/amax_history.h"
#include "kernels/torch/quantized_linear.h"
#include "workloads/models/model_config.h"
#include "workloads/models/operators.h"
#include "workloads/models/parameter_hooks.h"

// A Llama-style decoder: RMSNorm, rotary embeddings, grouped-query causal attention (with
// Qwen3's query/key norms where the config asks), a SwiGLU MLP or a top-k mixture of SwiGLU
// experts, and a tied or untied output layer. Parameters are FP32 master weights; every product
// runs on BF16 copies of them, through the recipe the module was built under. Unfused, the
// copies are cast from the masters in every forward (and the gradients cast back); fused, they
// are kept beside the masters, refreshed after each optimizer step (refresh_compute_weights),
// and the products write FP32 gradients for the masters directly. The element-wise operators
// and attention come from the plan's operator set (operators.h).
namespace lpbench::workloads {

// Whether any product of the recipe quantizes an operand with one scale for the whole tensor,
// found from the operand's own amax: what a producer's reported amax saves a pass over. (An
// amax history's scale, delayed scaling, is found in the history: the quantizing pass records
// the operand's amax itself.)
bool quantizes_by_own_amax(const kernels::Recipe& recipe);
// Which producers report every row's and column's amax of what they write under the recipe:
// those of the operands it quantizes per row both ways (per row in one product, per row of the
// transpose in the other). `forward`: X, SwiGLU's output (the down projection's input);
// `backward`: dY, SwiGLU's gradient (gate/up's) and RoPE's backward (qkv's). Only where
// producers report at all, and not under saved=int8 (SwiGLU then keeps an INT8 copy instead).
kernels::LineAmax producer_line_amax(const kernels::Recipe& recipe, bool producer_amax);

// The fused producers that, under `producer_amax`, write a product's quantized operand in its
// place, as a run records them ("the attention norm, the MLP norm, SwiGLU, SwiGLU's backward,
// RoPE's backward"; empty for none): each whose product in the first layer, as the recipe decides
// it, takes kernels::producible_x (the attention norm: QKV's X; the MLP norm: gate/up's, not where
// an MoE's router and experts read it; SwiGLU: the down projection's, under delayed scaling only)
// or kernels::producible_dy under delayed scaling (SwiGLU's backward: gate/up's dY in a dense MLP;
// RoPE's backward: QKV's dY, where `rope_backward` says its kernel takes the model's attention).
std::string quantizing_producers(const kernels::Recipe& recipe, bool producer_amax, bool moe,
                                 bool rope_backward);

// Whether RoPE's backward can write the QKV product's quantized dY for this model at `seq_len`
// tokens (kernels::causal_attention): no per-head norms between (Qwen3's), heads of 16 to 128
// elements dividing 128, the q and the k/v heads each a multiple of 128 columns, sequences of a
// multiple of 128 tokens.
bool rope_backward_quantizes(const ModelConfig& model, int64_t seq_len);

// Decides, module by module, what a recipe does, and keeps the decisions for the store.
class PrecisionPlan {
 public:
  // Modules built under the plan allocate and initialize their parameters on `device`: a GPU
  // draws them there (from the seeded CUDA generator) instead of on the CPU and copying.
  // `producer_amax`: the fused operators report max |x| of what they write where the recipe
  // quantizes tensorwise, so its quantizations skip their amax passes (docs/perf-log.md §10).
  explicit PrecisionPlan(const kernels::Recipe& recipe, torch::Device device = torch::kCPU,
                         Fusion fusion = Fusion::none, bool producer_amax = false)
      : recipe_(recipe),
        device_(device),
        ops_(fusion, producer_amax && quantizes_by_own_amax(recipe),
             recipe.saved == kernels::SavedActivations::int8,
             producer_line_amax(recipe, producer_amax), producer_amax) {}
  const torch::Device& device() const { return device_; }
  const Operators& ops() const { return ops_; }
  kernels::LinearGemms linear(const std::string& module);

  void embedding(const std::string& module);
  const std::vector<kernels::ModuleDecision>& decisions() const { return decisions_; }

 private:
  kernels::Recipe recipe_;  // a copy: a plan made from a temporary recipe once kept it dangling
  torch::Device device_;
  Operators ops_;
  std::vector<kernels::ModuleDecision> decisions_;
};

// An FP32 master parameter and, fused, the BF16 copy the products read.
struct ComputeCopy {
  torch::Tensor master;
  torch::Tensor bf16;
};

// Parameters that are used together: one decoder layer's, or those outside the layers
// (embedding, final norm, output layer). `copies` are the BF16 copies of some of them (fused).
struct ParameterUnit {
  std::vector<torch::Tensor> parameters;
  std::vector<ComputeCopy> copies;
};

class RecipeLinearImpl : public torch::nn::Module {
 public:
  RecipeLinearImpl(int64_t in_features, int64_t out_features, kernels::LinearGemms gemms,
                   double init_std, std::string name = "", torch::Device device = torch::kCPU,
                   Fusion fusion = Fusion::none);
  torch::Tensor forward(const torch::Tensor& x);
  const torch::Tensor& weight() const { return weight_; }
  // The BF16 copy the products read (fused), or an undefined tensor (unfused: cast per forward).
  const torch::Tensor& compute_weight() const { return compute_; }
  const kernels::LinearGemms& gemms() const { return gemms_; }
  // The BF16 copy whose quantization in the next forward would find W's amax itself (fused, W
  // quantized tensorwise, no quantized copy cached): for the layer to find with the others
  // (kernels::ScopedAmaxes). Undefined otherwise.
  torch::Tensor weight_wanting_amax() const;
  // Quantize W once and reuse it until clear_weight_cache (kernels::WeightQuantCache), or not.
  void cache_quantized_weight(bool enabled);
  // Launches W's quantization now, for the next forward alone to read (kernels::quantize_weight;
  // `with_dgrad`: that forward's X will require grad), where the forward would quantize W itself:
  // fused, no amax history, no cache of gradient accumulation. The bits are the forward's own.
  void prequantize_weight(bool with_dgrad);
  void clear_weight_cache() {
    if (weight_cache_) weight_cache_->clear();
  }
  // Whether the wgrad product adds into the master's defined gradient (on by default where
  // fused: kernels::quantized_linear's add_into_grad), or leaves the sum to autograd.
  void add_into_gradient(bool enabled) { add_into_grad_ = enabled && compute_.defined(); }
  bool adds_into_gradient() const { return add_into_grad_; }
  // How this layer's forward quantizes X, for X's producer to quantize it in its place
  // (kernels::producible_x: with this layer's X history, or by X's own amax; fused only);
  // neither where it cannot.
  kernels::InputQuantization input_quantization() const;
  // How this layer's backward quantizes dY, for dY's producer to quantize it in its place
  // (kernels::producible_dy, with this layer's dY history: delayed scaling only; fused only).
  kernels::InputQuantization grad_quantization() const;

 private:
  torch::Tensor weight_;   // [out, in], FP32
  torch::Tensor compute_;  // [out, in], BF16, fused only
  kernels::LinearGemms gemms_;
  std::string name_;  // as the store records it, e.g. "layers.3.mlp.down"
  // Delayed scaling's amax histories of X, W and dY (recipes with amax-history=<n> only).
  std::shared_ptr<kernels::LinearAmaxHistories> histories_;
  std::shared_ptr<kernels::WeightQuantCache> weight_cache_;  // gradient accumulation only
  kernels::WeightQuantCache prequantized_;  // prequantize_weight's, emptied by the next forward
  bool add_into_grad_ = false;
};

// The histories a layer under `gemms` needs: none unless some GEMM scales by a history.
std::shared_ptr<kernels::LinearAmaxHistories> histories_for(const kernels::LinearGemms& gemms);
TORCH_MODULE(RecipeLinear);

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const PrecisionPlan& plan);
  torch::Tensor forward(const torch::Tensor& x);
  // (x, the norm of x) for an x the residual stream carries on (Operators::residual_norm).
  // `consumer`: how the one product reading the norm quantizes it (Operators::norm).
  std::pair<torch::Tensor, torch::Tensor> residual_forward(
      const torch::Tensor& x, const kernels::InputQuantization& consumer = {});
  // (x + residual, the norm of that sum), in one pass where fused.
  std::pair<torch::Tensor, torch::Tensor> add_forward(
      const torch::Tensor& x, const torch::Tensor& residual,
      const kernels::InputQuantization& consumer = {});
  const torch::Tensor& weight() const { return weight_; }
  double eps() const { return eps_; }

 private:
  torch::Tensor weight_;
  double eps_;
  Operators ops_;
};
TORCH_MODULE(RMSNorm);

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  // How the QKV product quantizes the attention's input, for the norm before it to write.
  kernels::InputQuantization input_quantization() const { return qkv_->input_quantization(); }

 private:
  kernels::AttentionShape shape_;
  Operators ops_;
  RecipeLinear qkv_{nullptr}, out_{nullptr};
  RMSNorm q_norm_{nullptr}, k_norm_{nullptr};  // Qwen3 only
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan);
  torch::Tensor forward(const torch::Tensor& x);
  // How the gate/up product quantizes the MLP's input, for the norm before it to write.
  kernels::InputQuantization input_quantization() const { return gate_up_->input_quantization(); }

 private:
  Operators ops_;
  RecipeLinear gate_up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(Mlp);

// Top-k routing over SwiGLU experts (Mixtral): softmax over the router's logits, the k largest
// renormalized to sum to one, each token's output the weighted sum of its experts' outputs.
class MoeImpl : public torch::nn::Module {
 public:
  MoeImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan);
  torch::Tensor forward(const torch::Tensor& x);
  // Token-to-expert assignments of the last forward, per expert ([experts], int64, CPU).
  const torch::Tensor& last_load() const { return last_load_; }

 private:
  int64_t top_k_;
  RecipeLinear router_{nullptr};
  std::vector<Mlp> experts_;
  torch::Tensor last_load_;
};
TORCH_MODULE(Moe);

// The residual stream between two layers with its last add still to do: the stream is
// h + delta (delta undefined: h alone). A layer's first norm takes that add in its own pass
// (add_rms_norm, forward and backward) and the layer hands its MLP's output on as the next
// delta, so that no layer runs the residual add, or autograd's sum of the stream's two
// gradients, as a kernel of its own; the final norm takes the last layer's add. Fused stacks
// (Megatron, FlashAttention's GPT blocks) pass (hidden, residual) between blocks the same way.
struct ResidualStream {
  torch::Tensor h;
  torch::Tensor delta;
  // h + delta as one tensor (an add, where delta is defined).
  torch::Tensor sum() const { return delta.defined() ? h + delta : h; }
};

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelConfig& config, int64_t index, PrecisionPlan& plan);
  // The layer on the stream in.h + in.delta; the stream out as (residual sum, MLP output).
  ResidualStream forward_stream(const ResidualStream& in, const torch::Tensor& cos,
                                const torch::Tensor& sin);
  // The layer on x, its output summed: forward_stream({x}, ...).sum().
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  // The MoE block, or nullptr for a dense layer.
  const Moe& moe() const { return moe_; }
  // Where the plan's producers report amaxes (Operators::producer_amax), the BF16 weights of
  // attention's and the dense MLP's products whose amax the forward would otherwise find one by
  // one (RecipeLinearImpl::weight_wanting_amax): on the GPU the forward finds them together
  // first. The MoE's experts are left out: an expert that no token reaches runs no product.
  std::vector<torch::Tensor> weights_wanting_amax() const;

 private:
  // The products of attention and of the dense MLP, in the order the forward runs them.
  std::vector<RecipeLinearImpl*> dense_linears() const;
  bool weight_amaxes_ = false;  // the plan's producers report amaxes (Operators::producer_amax)
  RMSNorm attention_norm_{nullptr}, mlp_norm_{nullptr};
  Attention attention_{nullptr};
  Mlp mlp_{nullptr};
  Moe moe_{nullptr};
  std::string name_;
};
TORCH_MODULE(DecoderLayer);

class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const ModelConfig& config, const kernels::Recipe& recipe, int64_t max_seq_len,
              torch::Device device = torch::kCPU, Fusion fusion = Fusion::none,
              bool producer_amax = false);
  // tokens [B, T] (int64) → logits [B, T, vocab] (BF16)
  torch::Tensor forward(const torch::Tensor& tokens);
  // tokens → the final norm's output [B, T, hidden], for a loss that fuses the output layer.
  torch::Tensor hidden(const torch::Tensor& tokens);
  // The output layer as a fused loss takes it: its BF16 weight and FP32 master, where it is a
  // BF16 layer with a kept copy (fused); nothing where its products are quantized or unfused.
  std::optional<ComputeCopy> fusable_output() const;
  // Every master with its BF16 copy (fused; empty unfused): the optimizer refreshes the copies.
  std::vector<ComputeCopy> compute_copies() const;
  // Copies every master into its BF16 copy (after an optimizer step).
  void refresh_compute_weights();
  // Gradient accumulation: every linear layer quantizes its weight once and reuses it until
  // clear_quantized_weights, which the trainer calls after each optimizer step.
  void cache_quantized_weights(bool enabled);
  // Every linear layer's RecipeLinearImpl::add_into_gradient (fused only; on by default).
  void add_into_gradients(bool enabled);
  void clear_quantized_weights();
  // Keep only each layer's input between forward and backward; recompute the rest.
  void set_activation_checkpointing(bool enabled) { checkpointed_ = enabled ? kAllLayers : 0; }
  // The same for the first `count` layers only; the others keep what they save.
  void set_checkpointed_layers(int64_t count) { checkpointed_ = count; }
  // Fused: the embedding's gradient by rows (kernels/torch/embedding.h) instead of a dense table.
  void set_embedding_gradient_by_rows(bool enabled) { embedding_gradient_by_rows_ = enabled; }
  // The parameters outside the layers, then each layer's: together, every parameter once.
  ParameterUnit outer_unit() const;
  std::vector<ParameterUnit> layer_units() const;
  // Called around every layer's forward and backward (see parameter_hooks.h). Training with
  // hooks that need it (ParameterHooks::needs_recomputation) needs every layer checkpointed:
  // without it a layer's weights would be needed between its forward and backward, where the
  // hooks may have put them away.
  void set_parameter_hooks(std::shared_ptr<ParameterHooks> hooks) { hooks_ = std::move(hooks); }
  const std::vector<kernels::ModuleDecision>& decisions() const { return decisions_; }
  const std::vector<DecoderLayer>& layers() const { return layers_; }

 private:
  ModelConfig config_;
  Operators ops_;
  torch::Tensor embedding_;          // [vocab, hidden], FP32
  torch::Tensor embedding_compute_;  // its BF16 copy, fused and tied to the output layer only
  std::vector<DecoderLayer> layers_;
  RMSNorm final_norm_{nullptr};
  RecipeLinear output_{nullptr};      // absent when tied
  kernels::LinearGemms tied_output_;  // the tied output layer's GEMMs
  std::shared_ptr<kernels::LinearAmaxHistories> tied_output_histories_;
  torch::Tensor rope_cos_, rope_sin_;
  std::vector<kernels::ModuleDecision> decisions_;
  static constexpr int64_t kAllLayers = std::numeric_limits<int64_t>::max();
  int64_t checkpointed_ = 0;  // the first this many layers are recomputed in backward
  bool embedding_gradient_by_rows_ = false;
  std::shared_ptr<ParameterHooks> hooks_;
};
TORCH_MODULE(Decoder);

}  // namespace lpbench::workloads
