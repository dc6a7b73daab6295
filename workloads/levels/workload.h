#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/recipe.h"
#include "workloads/data/data_source.h"
#include "workloads/levels/flop_count.h"
#include "workloads/models/model_config.h"
#include "workloads/models/operators.h"

namespace lpbench::workloads {

namespace parallel {
struct Group;
}  // namespace parallel

// How much of a model one measurement covers.
enum class Level {
  gemm,    // matrix products alone, their operands' quantization included (or prequantized)
  linear,  // one linear layer, forward and backward, quantization included
  layer,   // one decoder layer, forward and backward
  model,   // embedding to loss with the optimizer step
};

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  // C[m,n] = A[m,k]·B[n,k]ᵀ
};

// "<level>:<model>[:<part>]" or "gemm:<M>x<N>x<K>", and for the gemm level a trailing
// ":prequantized". The model is a built-in name or a path to a Hugging Face config.json; the
// part names one linear layer (qkv, out, gate_up, down, output) for the gemm and linear levels.
struct WorkloadSpec {
  Level level = Level::model;
  std::string model;
  std::string part;
  std::optional<GemmShape> shape;
  // gemm level: operands quantized once before timing, so a step times the products alone (by
  // default a step quantizes its BF16 operands first, as training does).
  bool prequantized = false;
  std::string text() const;
};

// Throws std::invalid_argument with a message naming what is wrong and the valid choices.
WorkloadSpec parse_workload(std::string_view text);
std::vector<std::string> level_names();
std::string_view to_string(Level level);

// A linear layer of a decoder layer (or the output layer), as the gemm and linear levels use it.
struct LinearShape {
  std::string part;  // qkv, out, gate_up, down, output
  int64_t in_features = 0;
  int64_t out_features = 0;
};
std::vector<LinearShape> linear_shapes(const ModelConfig& config);
std::vector<std::string> linear_part_names();

// The GEMMs of one linear layer at `tokens` tokens, as (kind, shape) in the TN layout.
std::vector<std::pair<kernels::GemmKind, GemmShape>> training_gemms(const LinearShape& linear,
                                                                    int64_t tokens);

// What each data-parallel rank keeps of the model's state: ZeRO stage 1 shards AdamW's moments
// (parallel/sharded_adamw.h); stage 2 the gradients too, reduced layer by layer during backward;
// stage 3 the layers' weights too, gathered layer by layer (parallel/layer_sharded_adamw.h).
enum class Sharding { zero1, zero2, zero3 };
std::string_view to_string(Sharding sharding);
// "zero1", "zero2" or "zero3"; std::nullopt otherwise.
std::optional<Sharding> parse_sharding(std::string_view text);

// The training side of a workload: sizes, seed and the optimizer's fixed schedule (AdamW, linear
// warm-up then cosine decay to min_lr_ratio·lr, gradient clipping), and evaluation.
struct TrainingOptions {
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
  // Model level: micro-batches whose gradients are summed before each optimizer step; a step
  // trains ranks × micro_batch × grad_accum sequences.
  int64_t grad_accum = 1;
  // With grad_accum > 1: each linear layer quantizes its weight once an optimizer step and the
  // micro-batches reuse it (the same bits); off, every micro-batch quantizes it again.
  bool weight_cache = true;
  // Fused: each linear layer's wgrad product adds into the master's gradient where one is
  // defined (the micro-batches after the first; data parallel's flat buffers), instead of
  // writing its own for autograd to add (kernels::quantized_linear's add_into_grad).
  bool gradient_accumulation_fusion = true;
  uint64_t seed = 0;
  int64_t total_steps = 0;
  double lr = 0.0;
  int64_t lr_warmup_steps = 0;
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;
  bool activation_checkpointing = false;
  // With activation checkpointing: how many layers, the first ones, are recomputed in backward
  // (-1: all). The others keep what they save (Megatron's "block" recompute method).
  int64_t checkpointed_layers = -1;
  // Fused, with activation checkpointing: a recomputed layer's BF16 weight copies exist only
  // while it runs (models/layer_copies.h), 2 bytes a parameter less for two casts of the layer's
  // weights a step more.
  bool copies_per_layer = false;
  int64_t eval_batches = 4;  // validation batches per evaluation
  DataSpec data;
  // The operator set: lpbench's fused kernels (and BF16 compute copies of the weights, FP32
  // gradients from the products, the fused optimizer and loss), or the readable composition.
  Fusion fusion = Fusion::none;
  // Fused only: the producers of tensorwise-quantized operands report their amax.
  bool producer_amax = true;
  // Fused, one process, one micro-batch a step, an embedding not tied to the output layer: the
  // embedding's gradient is kept by rows, those the step's tokens reached, and the optimizer
  // steps by them (kernels/torch/embedding.h); off, a dense table of the vocabulary (the
  // ablation: the same bits).
  bool embedding_gradient_by_rows = true;
  // Data parallel (model level): this many ranks each train micro_batch sequences of the global
  // batch, the optimizer state sharded over them (0: one process, no group). `group` is set where
  // the ranks are joined; the memory plan reads data_parallel_size before any group exists.
  int data_parallel_size = 0;
  Sharding sharding = Sharding::zero1;
  std::shared_ptr<const parallel::Group> group;
};

// How many of `num_layers` layers the options recompute in backward.
int64_t recomputed_layers(const TrainingOptions& options, int64_t num_layers);

// Whether a model step under `options` keeps the embedding's gradient by rows (the option's
// conditions above).
bool embedding_gradient_by_rows(const TrainingOptions& options, bool tied_embeddings);

// The learning rate at `step` (0-based) under the options' schedule.
double learning_rate_at(int64_t step, const TrainingOptions& options);

struct StepOutput {
  std::optional<double> loss;       // the training loss (model level)
  std::optional<double> grad_norm;  // before clipping (model level)
  double lr = 0.0;
  int64_t tokens = 0;
};

struct EvalOutput {
  double loss = 0.0;
  int64_t tokens = 0;
};

// A named figure a workload reports about a step, such as one expert's share of the tokens.
using StepMetric = std::pair<std::string, double>;

// One workload under one recipe, ready to train (or run) step by step.
class Workload {
 public:
  virtual ~Workload() = default;
  // One step. Returns when the step's work is queued (or, with a loss, done).
  virtual StepOutput step(int64_t index) = 0;
  virtual int64_t tokens_per_step() const = 0;
  // Model FLOPs of one step (MEASURE.md's convention for the model level; 2·m·n·k summed over
  // the products otherwise).
  virtual double flops_per_step() const = 0;
  // The matrix products of one step by the format they run in (for the roofline fraction).
  virtual FlopCount gemm_flops() const = 0;
  // What the recipe did to each module, for the store.
  virtual const std::vector<kernels::ModuleDecision>& modules() const = 0;
  virtual std::string data_description() const { return "random tensors"; }
  // Validation loss after the current step, for levels that have one.
  virtual std::optional<EvalOutput> evaluate() { return std::nullopt; }
  // Figures about the steps since the last call (the load of each expert in the last step, the
  // share of int8-fallback's outlier blocks).
  virtual std::vector<StepMetric> step_metrics() { return {}; }
  // Whether the last step's outputs are finite, for levels without a loss. The runner asks after
  // the step's time is taken, so the check is not timed.
  virtual bool last_step_finite() const { return true; }
  // Shapes and sizes measured, for the store.
  virtual std::string shape_description() const = 0;
  // The operator set the step ran on, for the store: "fused" or "none", and where a level has
  // attention, the SDPA backend torch chose ("fused; attention: cudnn").
  virtual std::string operators() const { return ""; }
};

std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, const ModelConfig& model,
                                        const kernels::Recipe& recipe,
                                        const TrainingOptions& options,
                                        const torch::Device& device);

}  // namespace lpbench::workloads
