#include "workloads/levels/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/torch/linear_cross_entropy.h"

namespace lpbench::workloads {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// cuBLAS workspaces, the CUDA context's share of the allocator, fragmentation.
constexpr double kOverheadGiB = 0.5;

double gib(double bytes) {
  return bytes / kGiB;
}

// Bytes per element in which a GEMM keeps an operand for backward.
double saved_bytes(const kernels::GemmSpec& spec) {
  return spec.quantized() ? 1.0 : 2.0;
}

const kernels::LinearGemms& gemms_of(const kernels::Recipe& recipe, const std::string& module) {
  static const kernels::LinearGemms bf16 = kernels::LinearGemms::all_bf16();
  return kernels::decide(recipe, module, kernels::ModuleKind::linear).quantized ? recipe.gemms
                                                                                : bf16;
}

// One decoder layer's linear layers: their parameters, and how their weights are held for the
// dgrad GEMMs (quantized: an INT8 or FP8 copy made in forward and saved; BF16 fused: the kept
// BF16 copy itself; BF16 unfused: a BF16 cast made in forward and saved).
struct LayerWeights {
  double params = 0.0;           // every parameter of the layer (norm weights too)
  double linear = 0.0;           // the linear layers' weights
  double quantized_dgrad = 0.0;  // those whose dgrad reads a quantized copy
  double quantized_fprop = 0.0;  // those whose fprop reads a quantized copy
};

LayerWeights layer_weights(const ModelConfig& m, const kernels::Recipe& recipe) {
  LayerWeights w;
  auto add = [&](const std::string& module, double params) {
    w.linear += params;
    const kernels::LinearGemms& g = gemms_of(recipe, module);
    // Under requantize_w the quantized copy is made again in backward, not saved.
    if (g.dgrad.quantized() && !g.requantize_w) w.quantized_dgrad += params;
    if (g.fprop.quantized()) w.quantized_fprop += params;
  };
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.intermediate_size);
  add("layers.0.attention.qkv", h * (q + 2 * kv));
  add("layers.0.attention.out", q * h);
  const double experts = m.is_moe() ? static_cast<double>(m.num_experts) : 1.0;
  add(m.is_moe() ? "layers.0.moe.experts.0.gate_up" : "layers.0.mlp.gate_up", experts * 2 * f * h);
  add(m.is_moe() ? "layers.0.moe.experts.0.down" : "layers.0.mlp.down", experts * f * h);
  if (m.is_moe()) add("layers.0.moe.router", h * static_cast<double>(m.num_experts));
  w.params = w.linear + 2 * h + (m.qk_norm ? 2.0 * static_cast<double>(m.head_dim) : 0.0);
  return w;
}

// Bytes a layer's weights take beside their masters: `kept`, the fused BF16 copies that live
// from step to step; `saved`, the copies its forward saves for the dgrad GEMMs.
double kept_copy_bytes(const LayerWeights& w, Fusion fusion) {
  return fusion == Fusion::fused ? 2 * w.linear : 0.0;
}
double saved_copy_bytes(const LayerWeights& w, Fusion fusion) {
  return w.quantized_dgrad + (fusion == Fusion::fused ? 0.0 : 2 * (w.linear - w.quantized_dgrad));
}

// The MLP's saved bytes a token from one SwiGLU MLP's: dense, that; MoE, each token's hidden
// state goes to k experts, whose weighted outputs are kept for the sum, and the router keeps its
// BF16 input and FP32 probabilities.
double mlp_bytes(const ModelConfig& m, double swiglu) {
  if (!m.is_moe()) return swiglu;
  const double h = static_cast<double>(m.hidden_size);
  const double k = static_cast<double>(m.experts_per_token);
  return k * (swiglu + 2 * h) + 2 * h + 8 * static_cast<double>(m.num_experts);
}

// Bytes a row of `cols` elements takes as a fused operator keeps it for backward: BF16, or
// under saved=int8 INT8 with an FP32 scale a block of 128 (kernels/torch/saved_activation.h).
double kept_row_bytes(double cols, bool int8) {
  return int8 ? cols + 4 * std::ceil(cols / 128) : 2 * cols;
}

// The fused operators' saved tensors (kernels/torch/rmsnorm.cpp, attention.cpp, swiglu.cpp,
// quantized_linear.cpp), per token.
double fused_bytes_per_token(const ModelConfig& m, const kernels::Recipe& recipe) {
  const bool int8 = recipe.saved == kernels::SavedActivations::int8;
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(m.num_heads);
  const double q = static_cast<double>(m.num_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.intermediate_size);
  const bool out_quantized = gemms_of(recipe, "layers.0.attention.out").wgrad.quantized();
  // The attention norm keeps the layer's input (the stream's sum), the MLP's add-norm the residual
  // sum, each with its FP32 inverse RMS per token.
  double bytes = 2 * kept_row_bytes(h, int8) + 8;
  // The qkv product keeps its input (the norm's output, or its quantized copy).
  bytes += saved_bytes(gemms_of(recipe, "layers.0.attention.qkv").wgrad) * h;
  if (int8) {
    // Attention keeps qkv alone (rotated; with Qwen3's per-head norms, as the projection made
    // it): it runs again in backward. The output projection keeps the attention's output, or
    // its quantized copy.
    bytes += kept_row_bytes(q + 2 * kv, true) + (out_quantized ? q : 2 * q);
  } else {
    // Attention keeps the qkv output whole (q and k rotated in place, v read from it), its
    // output and the log-sum-exp; the output projection reads the attention's output, or keeps
    // a quantized copy.
    bytes += 2 * (q + 2 * kv) + 2 * q + 4 * heads + (out_quantized ? q : 0.0);
  }
  // Per-head norms of q and k (Qwen3): q and k normalized and rotated into a buffer of their
  // own, which attention keeps (qkv, counted above, is kept unrotated as the norms' input), and
  // the inverse RMS of every head; under saved=int8 nothing (they run again in backward from the
  // kept qkv).
  if (m.qk_norm && !int8) {
    bytes += 2 * (q + kv) + 4 * (heads + static_cast<double>(m.num_kv_heads));
  }
  // SwiGLU: the gate_up input, its output (one fused kernel reads both halves), the down input.
  const std::string mlp = m.is_moe() ? "layers.0.moe.experts.0" : "layers.0.mlp";
  const double swiglu = saved_bytes(gemms_of(recipe, mlp + ".gate_up").wgrad) * h +
                        kept_row_bytes(2 * f, int8) +
                        saved_bytes(gemms_of(recipe, mlp + ".down").wgrad) * f;
  return bytes + mlp_bytes(m, swiglu);
}

}  // namespace

double MemoryEstimate::total_gib() const {
  const double state = weights_gib + optimizer_gib + weight_copies_gib + transient_gib;
  if (gradients_persist) return state + gradients_gib + activations_gib;
  // Backward frees the activations as it makes the gradients: the sum of the two only grows
  // where the layer being differentiated holds more of one than it gives up of the other, so
  // the peak is where one of them is whole (at the start or at the end of backward).
  return state + std::max(activations_gib, gradients_gib + recompute_gib);
}

std::string MemoryEstimate::describe() const {
  return fmt::format(
      "{:.2f} GiB (weights {:.2f}, gradients {:.2f}, optimizer {:.2f}, weight copies {:.2f}, "
      "activations {:.2f}, temporaries {:.2f}{})",
      total_gib(), weights_gib, gradients_gib, optimizer_gib, weight_copies_gib, activations_gib,
      transient_gib,
      gradients_persist ? "" : "; gradients and activations peak apart: the larger counts");
}

double activation_bytes_per_token(const ModelConfig& m, const kernels::Recipe& recipe,
                                  Fusion fusion) {
  if (fusion == Fusion::fused) return fused_bytes_per_token(m, recipe);
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.intermediate_size);
  const double s_qkv = saved_bytes(gemms_of(recipe, "layers.0.attention.qkv").wgrad);
  const double s_out = saved_bytes(gemms_of(recipe, "layers.0.attention.out").wgrad);
  // Two RMSNorms keep FP32 copies of their input and normalized output (8h each).
  double bytes = 16 * h;
  // Attention: the qkv input; the qkv output (V is a view of it, saved by attention); rotary
  // embeddings keep an FP32 copy and a BF16 result of q and k; attention's output; the output
  // projection's input.
  bytes += s_qkv * h + 2 * (q + 2 * kv) + 6 * (q + kv) + 2 * q + s_out * q;
  if (m.qk_norm) bytes += 8 * (q + kv);
  // SwiGLU: the gate_up input, its output (gate and up are views), silu's output, the down input.
  const std::string mlp = m.is_moe() ? "layers.0.moe.experts.0" : "layers.0.mlp";
  const double s_gu = saved_bytes(gemms_of(recipe, mlp + ".gate_up").wgrad);
  const double s_down = saved_bytes(gemms_of(recipe, mlp + ".down").wgrad);
  const double swiglu = s_gu * h + 4 * f + 2 * f + s_down * f;
  return bytes + mlp_bytes(m, swiglu);
}

MemoryEstimate estimate_memory(const WorkloadSpec& spec, const ModelConfig& m,
                               const kernels::Recipe& recipe, const TrainingOptions& o) {
  MemoryEstimate e;
  const double tokens = static_cast<double>(o.micro_batch * o.seq_len);
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size);
  e.transient_gib = kOverheadGiB;

  switch (spec.level) {
    case Level::gemm: {
      // BF16 sources (X, W, dY of each linear layer, or A and B), plus the INT8 or FP8 copies of
      // the operands: all of them when prequantized, one linear layer's at a time otherwise (a
      // BF16 product reads its sources).
      double sources = 0.0;
      double copies_all = 0.0;
      double copies_one = 0.0;
      double largest_output = 0.0;
      auto copies = [&](const kernels::GemmSpec& gemm, const GemmShape& s) {
        const double mn = static_cast<double>(s.m) * static_cast<double>(s.n);
        // The INT32 accumulator and the BF16 result of the product being computed.
        largest_output = std::max(largest_output, mn * (gemm.quantized() ? 6.0 : 2.0));
        return (gemm.quantized() ? 1.0 : 0.0) * static_cast<double>(s.k) *
               (static_cast<double>(s.m) + static_cast<double>(s.n));
      };
      if (spec.shape) {
        const GemmShape& s = *spec.shape;
        sources = 2.0 * static_cast<double>(s.k) * static_cast<double>(s.m + s.n);
        copies_all = copies_one = copies(recipe.gemms.fprop, s);
      } else {
        for (const LinearShape& linear : linear_shapes(m)) {
          if (!spec.part.empty() && linear.part != spec.part) continue;
          const double in = static_cast<double>(linear.in_features);
          const double out = static_cast<double>(linear.out_features);
          sources += 2.0 * (tokens * in + out * in + tokens * out);
          double layer = 0.0;
          for (const auto& [kind, shape] : training_gemms(linear, o.micro_batch * o.seq_len)) {
            layer += copies(recipe.gemms[kind], shape);
          }
          copies_all += layer;
          copies_one = std::max(copies_one, layer);
        }
      }
      e.activations_gib = gib(sources + (spec.prequantized ? copies_all : copies_one));
      e.transient_gib += gib(largest_output);
      return e;
    }
    case Level::linear: {
      for (const LinearShape& linear : linear_shapes(m)) {
        if (linear.part != spec.part) continue;
        const double in = static_cast<double>(linear.in_features);
        const double out = static_cast<double>(linear.out_features);
        e.weights_gib = gib(4 * in * out);
        e.gradients_gib = gib(4 * in * out);
        e.weight_copies_gib = gib(saved_bytes(recipe.gemms.dgrad) * in * out);
        // Input, its gradient, the upstream gradient and the output (BF16), and the saved input.
        e.activations_gib = gib(
            tokens * (2 * in + 2 * in + 2 * out + 2 * out + saved_bytes(recipe.gemms.wgrad) * in));
      }
      return e;
    }
    case Level::layer: {
      const LayerWeights w = layer_weights(m, recipe);
      e.weights_gib = gib(4 * w.params);
      e.gradients_gib = gib(4 * w.params);
      e.weight_copies_gib = gib(kept_copy_bytes(w, o.fusion) + saved_copy_bytes(w, o.fusion));
      // Saved activations, plus the input stream's two parts (ResidualStream), its gradient, the
      // output stream's two parts and the upstream gradient.
      e.activations_gib = gib(tokens * (activation_bytes_per_token(m, recipe, o.fusion) + 12 * h));
      return e;
    }
    case Level::model: {
      const bool fused = o.fusion == Fusion::fused;
      const double params = static_cast<double>(m.parameter_count());
      const LayerWeights w = layer_weights(m, recipe);
      const double layer_count = static_cast<double>(m.num_layers);
      const double recomputed = static_cast<double>(recomputed_layers(o, m.num_layers));
      // Layers whose saved tensors are alive at once: those not recomputed, all of them from
      // the end of forward; or, where every layer is recomputed, the one being recomputed.
      const double live = std::max(layer_count - recomputed, recomputed > 0 ? 1.0 : 0.0);
      // Layers whose fused BF16 copies exist at once: all of them, or, made per layer for the
      // recomputed ones (layer_copies.h), those not recomputed and the one running.
      const double resident = o.copies_per_layer
                                  ? layer_count - recomputed + (recomputed > 0 ? 1.0 : 0.0)
                                  : layer_count;
      // Outside the layers: fused, the output layer's BF16 copy (the embedding's lookup reads
      // the FP32 table, and where the two are tied the copy serves the output layer); the
      // output layer's saved copy for its dgrad.
      const kernels::GemmSpec output_dgrad = gemms_of(recipe, "output").dgrad;
      const double vh = v * h;
      const double outer_copies = fused ? 2 * vh : 0.0;
      const double output_saved_copy = output_dgrad.quantized() ? vh : (fused ? 0.0 : 2 * vh);
      e.weights_gib = gib(4 * params);
      // By rows, the embedding's gradient holds a row a token at most (kernels/torch/embedding.h).
      e.gradients_gib = embedding_gradient_by_rows(o, m.tie_embeddings)
                            ? gib(4 * (params - vh) + 4 * std::min(tokens, v) * h)
                            : gib(4 * params);
      // The copies saved for the dgrad GEMMs are freed as backward goes, as the activations
      // are: they are counted with them.
      e.weight_copies_gib = gib(resident * kept_copy_bytes(w, o.fusion) + outer_copies);
      double saved_copies = live * saved_copy_bytes(w, o.fusion) + output_saved_copy;
      if (o.grad_accum > 1) {
        // The gradients are summed over the micro-batches: they live beside every
        // micro-batch's activations after the first.
        e.gradients_persist = true;
        if (o.weight_cache) {
          // Every layer's quantized weights, both layouts, for the whole step; they are the
          // dgrad copies the live layers save.
          saved_copies +=
              layer_count * (w.quantized_fprop + w.quantized_dgrad) - live * w.quantized_dgrad;
        }
      }
      const double ranks = static_cast<double>(std::max(1, o.data_parallel_size));
      e.optimizer_gib = gib(8 * params / ranks);
      if (o.data_parallel_size >= 1) {
        // What each rank keeps (parallel/sharded_adamw.h, layer_sharded_adamw.h). Every stage:
        // the moments' slice; the gradients' buffers live from step to step. zero1: whole
        // weights and gradients, plus the reduced gradient's slice and a send buffer. zero2 and
        // zero3: the masters' and the reduced gradients' slices; whole gradients only outside
        // the layers and for two layers at a time (one reducing while the next is computed);
        // fused, the linear weights' FP32 masters are slices only, and a BF16 slice of them is
        // what is gathered. zero2: the weights whole (fused: their BF16 copies). zero3: the
        // layers' weights whole for two layers at a time (one computing while the next is
        // gathered).
        e.gradients_persist = true;
        const double outer = params - layer_count * w.params;
        const double slices = 4 * params / ranks + (fused ? 2 * params / ranks : 0.0);
        const double two_layers = 2 * 4 * w.params;
        switch (o.sharding) {
          case Sharding::zero1:
            e.transient_gib += gib(8 * params / ranks);
            break;
          case Sharding::zero2:
            e.weights_gib = gib((fused ? 0.0 : 4 * params) + slices);
            e.gradients_gib = gib(4 * params / ranks + 4 * outer + two_layers);
            break;
          case Sharding::zero3:
            e.weights_gib = gib(slices + (fused ? 0.0 : 4 * outer + two_layers));
            e.gradients_gib = gib(4 * params / ranks + 4 * outer + two_layers);
            e.weight_copies_gib = gib(2 * kept_copy_bytes(w, o.fusion) + outer_copies);
            break;
        }
      }
      const double per_layer = activation_bytes_per_token(m, recipe, o.fusion);
      // Recomputed layers keep their input; the rest everything they save. Then the final norm
      // (8h unfused; fused, 2h and the output layer's input 2h) and the output layer's input.
      double saved = recomputed * 2 * h + live * per_layer + 10 * h;
      if (fused && !output_dgrad.quantized() && !gemms_of(recipe, "output").wgrad.quantized()) {
        // The fused output layer and loss (kernels/torch/linear_cross_entropy.h) keep the
        // logits' BF16 gradient from forward to backward. On the GPU the product writes the
        // logits there and the loss kernel turns them into it in place, beside one FP32 loss a
        // token; the reference path (the CPU's) also holds a chunk of FP32 logits at a time.
        // The plan keeps the chunk's bytes, the larger of the two: the full-depth plans were
        // measured with them, and those without them (Qwen3-8B fitting 1.1 GiB inside an H200
        // with no per-layer copies) have not been (docs/perf-log.md §46).
        saved += 2 * v;
        e.transient_gib +=
            gib(std::min(tokens, static_cast<double>(kernels::kLossChunkTokens)) * 10 * v);
      } else {
        // Logits in BF16, their FP32 copy and the log-softmax kept for backward.
        e.transient_gib += gib(tokens * 10 * v);
      }
      e.activations_gib = gib(tokens * saved + saved_copies);
      // The untied output layer's gradient is made first in backward, beside every activation.
      if (!e.gradients_persist && !m.tie_embeddings) e.activations_gib += gib(4 * vh);
      // The gradients of a recomputed layer appear while the layer below is recomputed.
      e.recompute_gib = recomputed > 0 ? gib(tokens * per_layer) : 0.0;
      return e;
    }
  }
  return e;
}

}  // namespace lpbench::workloads
