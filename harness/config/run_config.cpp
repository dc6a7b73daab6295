#include "harness/config/run_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>

#include "base/errors.h"
#include "harness/env/usable_memory.h"
#include "harness/timing/memory_snapshot.h"
#include "harness/timing/trace.h"
#include "workloads/data/token_file.h"
#include "workloads/models/hf_config.h"

namespace lpbench::config {

namespace {

// Tokens per step: far beyond any real run (the flags are checked in run_options.cpp).
constexpr int64_t kMaxSize = 1 << 24;

// The largest value in [1, upper] for which `fits` holds (it is monotone), or 0.
int64_t largest_fitting(int64_t upper, const std::function<bool(int64_t)>& fits) {
  int64_t lo = 0;
  int64_t hi = upper;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

double largest_estimate(const ResolvedWorkload& w, const ResolvedRun& run) {
  double worst = 0.0;
  for (const kernels::Recipe& recipe : run.recipes) {
    worst = std::max(worst,
                     workloads::estimate_memory(w.spec, w.model, recipe, w.training).total_gib());
  }
  return worst;
}

// A model that does not fit as asked: activation checkpointing of the fewest layers that makes it
// fit; fused, then with the recomputed layers' BF16 weight copies made per layer; and, where the
// micro-batch was left to the model's default, the largest that fits with both. All of them leave
// the numbers trained the same (checkpointing recomputes; a copy made per layer is the same cast
// of the same masters; a micro-batch is the user's to set, so one given is never lowered). What
// the user chose to recompute is kept. Says what it chose in the workload's plan note.
void choose_to_fit(ResolvedWorkload& w, const ResolvedRun& run) {
  if (w.spec.level != workloads::Level::model || !run.config.memory_plan) return;
  // zero2 and zero3 recompute every layer and hold the weights' copies themselves.
  if (w.training.data_parallel_size > 0 && w.training.sharding != workloads::Sharding::zero1) {
    return;
  }
  const double budget = run.device_memory_gib;
  const double asked = largest_estimate(w, run);
  if (asked <= budget) return;
  const int64_t layers = w.model.num_layers;
  const bool fused = w.training.fusion == workloads::Fusion::fused;
  const bool chosen = run.config.activation_checkpointing || run.config.checkpoint_layers != 0;
  ResolvedWorkload trial = w;
  auto fits = [&](int64_t recomputed, bool per_layer) {
    trial.training.activation_checkpointing = recomputed > 0;
    trial.training.checkpointed_layers = recomputed;
    trial.training.copies_per_layer = per_layer;
    return largest_estimate(trial, run) <= budget;
  };
  auto describe = [&](int64_t recomputed, bool per_layer) {
    const std::string which =
        recomputed == layers
            ? std::string("every layer recomputed in backward")
            : fmt::format(
                  "the first {} of {} layers recomputed in backward, the others keep "
                  "their activations",
                  recomputed, layers);
    return fmt::format("activation checkpointing on ({}){}", which,
                       per_layer ? ", their BF16 weight copies made per layer where used" : "");
  };
  for (const bool per_layer : {false, true}) {
    if (per_layer && !fused) break;
    int64_t recomputed = workloads::recomputed_layers(w.training, layers);
    if (chosen) {
      if (!per_layer || !fits(recomputed, true)) continue;
    } else {
      // The fewest recomputed layers that fit: memory falls as more layers are recomputed.
      if (!fits(layers, per_layer)) continue;
      int64_t lo = 1;
      int64_t hi = layers;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (fits(mid, per_layer)) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      recomputed = lo;
      fits(recomputed, per_layer);
    }
    w.plan_note = fmt::format(
        "memory plan: {}: the model needs about {:.1f} GiB as asked, {:.1f} GiB so, of "
        "{:.1f} GiB",
        describe(recomputed, per_layer), asked, largest_estimate(trial, run), budget);
    w.training = trial.training;
    return;
  }
  if (run.config.micro_batch > 0) return;
  trial.training.activation_checkpointing = true;
  trial.training.checkpointed_layers = -1;
  trial.training.copies_per_layer = fused;
  const int64_t batch = largest_fitting(w.training.micro_batch, [&](int64_t b) {
    trial.training.micro_batch = b;
    return largest_estimate(trial, run) <= budget;
  });
  if (batch <= 0) return;
  trial.training.micro_batch = batch;
  w.plan_note = fmt::format(
      "memory plan: {} and micro-batch {} (the model's default is {}): the model needs about "
      "{:.1f} GiB as it is, {:.1f} GiB so, of {:.1f} GiB",
      describe(layers, fused), batch, w.training.micro_batch, asked, largest_estimate(trial, run),
      budget);
  w.training = trial.training;
}

// Data parallel under --sharding auto: the least sharding that fits, zero1 as asked, else zero2
// with a tenth of the memory to spare, else zero3 (both with activation checkpointing); zero3
// where none fits, so that the steps after look for a micro-batch or a depth with the most
// memory-frugal stage. zero2's margin: it is no faster than zero3 where the gathers overlap
// (docs/perf-log.md §17), and Mixtral-8x7B-8L's zero2 planned at 98.6 % of an H200 ran out of
// memory in its allocator's fragments.
void choose_sharding(ResolvedWorkload& w, const ResolvedRun& run) {
  // zero2 and zero3 reduce the gradients during each backward: not with gradient accumulation.
  if (w.training.data_parallel_size <= 0 || run.config.sharding != "auto" ||
      !run.config.memory_plan || w.training.grad_accum > 1) {
    return;
  }
  const double budget = run.device_memory_gib;
  const double zero1 = largest_estimate(w, run);
  if (zero1 <= budget) return;
  ResolvedWorkload trial = w;
  trial.training.activation_checkpointing = true;
  trial.training.checkpointed_layers = -1;
  for (const workloads::Sharding stage : {workloads::Sharding::zero2, workloads::Sharding::zero3}) {
    trial.training.sharding = stage;
    const double needed = largest_estimate(trial, run);
    const double room = stage == workloads::Sharding::zero2 ? 0.9 * budget : budget;
    if (needed <= room || stage == workloads::Sharding::zero3) {
      w.plan_note = fmt::format(
          "memory plan: sharding {} with activation checkpointing (the layers reduce their "
          "gradients{} one by one): zero1 needs about {:.1f} GiB a rank, {} {:.1f} GiB, of {:.1f} "
          "GiB",
          workloads::to_string(stage),
          stage == workloads::Sharding::zero3 ? " and gather their weights" : "", zero1,
          workloads::to_string(stage), needed, budget);
      w.training = trial.training;
      return;
    }
  }
}

// Refuses a workload that cannot fit, saying by how much and what would; turns interleaving off
// where only one recipe at a time fits.
void plan_memory(ResolvedWorkload& w, const ResolvedRun& run) {
  choose_sharding(w, run);
  choose_to_fit(w, run);
  const double budget = run.device_memory_gib;
  size_t worst = 0;
  double persistent = 0.0;
  double peak_step = 0.0;
  for (size_t i = 0; i < run.recipes.size(); ++i) {
    w.memory.push_back(workloads::estimate_memory(w.spec, w.model, run.recipes[i], w.training));
    const workloads::MemoryEstimate& e = w.memory.back();
    if (e.total_gib() > w.memory[worst].total_gib()) worst = i;
    // Fused, the weights' BF16 copies are kept beside the masters from step to step.
    const double copies = e.weight_copies_gib;
    const bool kept = w.training.fusion == workloads::Fusion::fused;
    persistent += e.weights_gib + e.gradients_gib + e.optimizer_gib + (kept ? copies : 0.0);
    peak_step = std::max(peak_step, (kept ? 0.0 : copies) + e.activations_gib + e.transient_gib);
  }
  const workloads::MemoryEstimate& e = w.memory[worst];
  if (e.total_gib() > budget && run.config.memory_plan) {
    std::string advice;
    if (w.spec.level == workloads::Level::model) {
      // With checkpointing (and, fused, copies per layer), which the plan turns on by itself
      // where it is enough.
      ResolvedWorkload trial = w;
      trial.training.activation_checkpointing = true;
      trial.training.checkpointed_layers = -1;
      trial.training.copies_per_layer = w.training.fusion == workloads::Fusion::fused;
      const int64_t layers = largest_fitting(w.model.num_layers, [&](int64_t n) {
        trial.model = w.model.with_layers(n);
        return largest_estimate(trial, run) <= budget;
      });
      advice += layers > 0 ? fmt::format(
                                 "even with activation checkpointing; the largest "
                                 "--layers that fits is {}; ",
                                 layers)
                           : std::string("no depth fits at this size; ");
    }
    ResolvedWorkload trial = w;
    const int64_t batch = largest_fitting(w.training.micro_batch, [&](int64_t b) {
      trial.training.micro_batch = b;
      return largest_estimate(trial, run) <= budget;
    });
    advice += batch > 0
                  ? fmt::format("the largest --micro-batch that fits at this depth is {}", batch)
                  : std::string("at this depth no micro-batch fits at this sequence length");
    const std::string room = run.config.memory_budget_gib > 0.0
                                 ? fmt::format("--memory-budget-gib allows {:.1f} GiB", budget)
                                 : fmt::format("{} has {:.1f} GiB", run.device.str(), budget);
    throw InputError(fmt::format("{} under {} needs about {} but {}; {}", w.spec.text(),
                                 run.recipes[worst].name, e.describe(), room, advice));
  }
  if (w.interleave && run.recipes.size() > 1 && persistent + peak_step > budget) {
    w.interleave = false;
    w.interleave_note = fmt::format(
        "recipes run one after another: interleaved, their weights and optimizer states "
        "together ({:.1f} GiB) and one step's peak ({:.1f} GiB) exceed {:.1f} GiB",
        persistent, peak_step, budget);
  }
}

ResolvedWorkload resolve_workload(const std::string& text, const RunConfig& config) {
  ResolvedWorkload w;
  try {
    w.spec = workloads::parse_workload(text);
    if (!config.model.empty() && !w.spec.shape) w.spec.model = config.model;
    if (!w.spec.shape) {
      workloads::ImportedModel imported = workloads::resolve_model(w.spec.model);
      w.model = imported.config;
      w.model_notes = imported.notes;
    } else {
      w.model = workloads::builtin_model("tiny");  // sizes only; a bare GEMM has no model
      w.model.name = "none";
    }
  } catch (const std::invalid_argument& error) {
    throw InputError(error.what());
  }
  if (config.layers > 0 && w.spec.level == workloads::Level::model) {
    check_range("--layers", config.layers, 1, w.model.published_layers);
    w.model = w.model.with_layers(config.layers);
  }

  workloads::TrainingOptions& t = w.training;
  t.micro_batch = config.micro_batch > 0 ? config.micro_batch : w.model.default_micro_batch;
  t.seq_len = config.seq_len > 0 ? config.seq_len : w.model.default_seq_len;
  if (t.micro_batch * t.seq_len > kMaxSize) {
    throw InputError(fmt::format("--micro-batch × --seq-len = {} tokens per step exceeds {}",
                                 t.micro_batch * t.seq_len, kMaxSize));
  }
  if (config.grad_accum > 1 && w.spec.level != workloads::Level::model) {
    throw InputError(fmt::format(
        "--grad-accum applies to model-level workloads (it sums gradients before an optimizer "
        "step); {} is a {} workload",
        w.spec.text(), workloads::to_string(w.spec.level)));
  }
  t.grad_accum = config.grad_accum;
  t.weight_cache = config.weight_cache;
  t.gradient_accumulation_fusion = config.gradient_accumulation_fusion;
  t.embedding_gradient_by_rows = config.embedding_gradient_by_rows;
  if (t.grad_accum * t.micro_batch * t.seq_len > kMaxSize) {
    throw InputError(
        fmt::format("--grad-accum × --micro-batch × --seq-len = {} tokens per step exceeds {}",
                    t.grad_accum * t.micro_batch * t.seq_len, kMaxSize));
  }
  t.seed = config.seed;
  t.total_steps = config.steps;
  t.lr = config.lr > 0.0 ? config.lr : w.model.default_lr;
  t.lr_warmup_steps = std::max<int64_t>(1, config.steps / 10);
  t.activation_checkpointing = config.activation_checkpointing;
  if (config.checkpoint_layers != 0) {
    if (w.spec.level != workloads::Level::model) {
      throw InputError(
          fmt::format("--checkpoint-layers applies to model-level workloads; {} is a {} workload",
                      w.spec.text(), workloads::to_string(w.spec.level)));
    }
    check_range("--checkpoint-layers", config.checkpoint_layers, 1, w.model.num_layers);
    t.activation_checkpointing = true;
    t.checkpointed_layers = config.checkpoint_layers;
  }
  t.eval_batches = config.eval_batches;
  try {
    t.data = workloads::parse_data_spec(config.data, config.token_dtype);
  } catch (const std::invalid_argument& error) {
    throw InputError(error.what());
  }
  if (t.data.vocab_size) {
    if (w.model.vocab_follows_data) {
      w.model.vocab_size = *t.data.vocab_size;
    } else if (*t.data.vocab_size > w.model.vocab_size) {
      throw InputError(fmt::format(
          "--data '{}' has a vocabulary of {}, larger than {}'s {}; prepare it with --vocab {} or "
          "fewer",
          config.data, *t.data.vocab_size, w.model.name, w.model.vocab_size, w.model.vocab_size));
    }
  }
  if (t.data.kind != workloads::DataSpec::Kind::synthetic &&
      w.spec.level != workloads::Level::model) {
    throw InputError(
        fmt::format("--data applies to the model level; {} uses random tensors", w.spec.text()));
  }
  if (t.data.kind == workloads::DataSpec::Kind::token_file) {
    // Opened here once to check its size and every id against the vocabulary, so that a bad
    // file is refused before the database is touched rather than failing each recipe's run.
    try {
      const workloads::TokenFile checked(t.data.token_path, t.data.dtype, w.model.vocab_size,
                                         t.seed, t.seq_len);
    } catch (const std::invalid_argument& error) {
      throw InputError(error.what());
    }
  }
  w.interleave = config.interleave;
  return w;
}

// saved=int8 is a property of the fused operators: the unfused set is libtorch's own
// composition, whose saved tensors torch's autograd keeps as they are.
void check_saved_activations(const ResolvedRun& run, const ResolvedWorkload& w) {
  const bool has_operators =
      w.spec.level == workloads::Level::layer || w.spec.level == workloads::Level::model;
  if (!has_operators || w.training.fusion == workloads::Fusion::fused) return;
  for (const kernels::Recipe& recipe : run.recipes) {
    if (recipe.saved != kernels::SavedActivations::int8) continue;
    throw InputError(fmt::format(
        "recipe '{}' keeps the activations saved for backward as INT8 in the fused operators, "
        "and {} runs with --fusion none; add --fusion fused (the default on a GPU; on the CPU "
        "it runs the fused operators' references)",
        recipe.name, w.spec.text()));
  }
}

workloads::Fusion resolve_fusion(const std::string& text, const torch::Device& device) {
  if (text == "fused") return workloads::Fusion::fused;
  if (text == "none") return workloads::Fusion::none;
  return device.is_cuda() ? workloads::Fusion::fused : workloads::Fusion::none;
}

}  // namespace

torch::Device resolve_device(const std::string& text) {
  if (text == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0)
                                       : torch::Device(torch::kCPU);
  }
  if (text == "cpu") return torch::Device(torch::kCPU);
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available()) {
      throw InputError(fmt::format(
          "--device {}: no CUDA device is available here; use --device cpu or auto", text));
    }
    int64_t index = 0;
    if (text != "cuda") {
      try {
        size_t used = 0;
        index = std::stoll(text.substr(5), &used);
        if (used != text.size() - 5) throw std::invalid_argument(text);
      } catch (const std::exception&) {
        throw InputError(fmt::format("--device '{}' is not cuda:<index>", text));
      }
    }
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    check_range("--device index", index, 0, count - 1);
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw InputError(
      fmt::format("unknown --device '{}'; valid: auto, cpu, cuda, cuda:<index>", text));
}

namespace {

// Delayed scaling (a recipe's amax-history=<n>) keeps a history per layer across training steps.
void check_delayed_scaling(const ResolvedRun& run, const RunConfig& config) {
  for (const kernels::Recipe& recipe : run.recipes) {
    if (recipe.gemms.fprop.amax_history == 0 && recipe.gemms.dgrad.amax_history == 0 &&
        recipe.gemms.wgrad.amax_history == 0) {
      continue;
    }
    if (config.separate_layout_quantize) {
      throw InputError(fmt::format(
          "{}: delayed scaling records each operand's amax once per step, from the pass that "
          "writes both layouts; run it without --separate-layout-quantize",
          recipe.name));
    }
    for (const ResolvedWorkload& w : run.workloads) {
      if (w.spec.level == workloads::Level::gemm) {
        throw InputError(fmt::format(
            "{}: delayed scaling keeps a layer's amax history across training steps; use a "
            "linear, layer or model workload, not {}",
            recipe.name, w.spec.text()));
      }
    }
  }
}

// --memory-snapshot records the CUDA caching allocator, during a step that allocates.
void check_memory_snapshot(const ResolvedRun& run, const RunConfig& config) {
  if (config.memory_snapshot_step < 0) return;
  if (!run.device.is_cuda() || !timing::memory_snapshot_available()) {
    throw InputError(fmt::format(
        "--memory-snapshot records the CUDA caching allocator's history, and this run's device "
        "is {}: give --device cuda on a GPU machine, or drop --memory-snapshot",
        run.device.str()));
  }
  if (config.cuda_graph && config.memory_snapshot_step >= 1) {
    throw InputError(fmt::format(
        "--memory-snapshot {} with --cuda-graph: a replayed step allocates nothing the allocator "
        "sees; give step 0 (the step before the capture) or drop --cuda-graph",
        config.memory_snapshot_step));
  }
}

// --cuda-graph replays one captured step: only steps whose GPU work and arguments the host
// does not change from step to step, and nothing that reads the GPU's results within a step.
void check_cuda_graph(const ResolvedRun& run, const RunConfig& config) {
  if (!config.cuda_graph) return;
  if (config.regions || config.diagnostics_every > 0) {
    throw InputError(
        fmt::format("--cuda-graph replays the step without its host code, so {} would time or read "
                    "nothing; drop one of them",
                    config.regions ? "--regions" : "--diagnostics"));
  }
  for (const ResolvedWorkload& w : run.workloads) {
    if (w.spec.level != workloads::Level::layer && w.spec.level != workloads::Level::linear) {
      throw InputError(fmt::format(
          "--cuda-graph captures layer and linear workloads; {} is a {} workload, whose step "
          "{}",
          w.spec.text(), workloads::to_string(w.spec.level),
          w.spec.level == workloads::Level::model
              ? "reads its loss and gradient norm on the host and takes a new learning rate"
              : "times its products one by one"));
    }
    if (w.model.is_moe()) {
      throw InputError(fmt::format(
          "--cuda-graph: {} routes its tokens to experts by counts read on the host; drop "
          "--cuda-graph for MoE models",
          w.spec.text()));
    }
  }
  for (const kernels::Recipe& recipe : run.recipes) {
    for (const kernels::GemmKind kind : kernels::kGemmKinds) {
      const kernels::GemmSpec& g = recipe.gemms[kind];
      const char* why =
          g.lhs_rounding == kernels::Rounding::stochastic
              ? "draws a new rounding seed on the host every step"
          : g.scaling == kernels::Scaling::fallback || g.lhs_scaling == kernels::Scaling::fallback
              ? "counts its outlier blocks on the host"
              : nullptr;
      if (why != nullptr) {
        throw InputError(
            fmt::format("--cuda-graph: {} {}, which a replayed step would not do; run it without "
                        "--cuda-graph",
                        recipe.name, why));
      }
    }
  }
  if (!run.device.is_cuda()) {
    throw InputError(fmt::format(
        "--cuda-graph replays a step's GPU work, and this run's device is {}; drop it, or run "
        "on a GPU",
        run.device.str()));
  }
}

}  // namespace

namespace {

// A data-parallel rank: model workloads only, and on GPUs the one of its LOCAL_RANK.
void resolve_data_parallel(ResolvedRun& run, const RunConfig& config) {
  for (ResolvedWorkload& w : run.workloads) {
    if (w.spec.level != workloads::Level::model) {
      throw InputError(fmt::format(
          "data parallel (--nproc-per-node or a launcher's WORLD_SIZE) trains model workloads "
          "only; {} is a {} workload: run it in one process",
          w.spec.text(), workloads::to_string(w.spec.level)));
    }
    w.training.data_parallel_size = static_cast<int>(config.world_size);
    if (const std::optional<workloads::Sharding> s = workloads::parse_sharding(config.sharding)) {
      w.training.sharding = *s;
      // The layer-sharded stages work at the recomputation's boundary (layer_sharded_adamw.h).
      if (*s != workloads::Sharding::zero1) {
        if (config.grad_accum > 1) {
          throw InputError(fmt::format(
              "--sharding {} reduces each layer's gradients as backward makes them, once a "
              "micro-batch; with --grad-accum use --sharding zero1",
              config.sharding));
        }
        if (config.checkpoint_layers != 0) {
          throw InputError(fmt::format(
              "--sharding {} recomputes every layer; drop --checkpoint-layers, or use zero1",
              config.sharding));
        }
        w.training.activation_checkpointing = true;
        w.training.checkpointed_layers = -1;
      }
    }
  }
  if (run.device.is_cuda()) {
    if (config.device != "auto" && config.device != "cuda") {
      throw InputError(fmt::format(
          "--device {}: with data parallel each rank takes the GPU of its LOCAL_RANK; give "
          "--device cuda (or auto)",
          config.device));
    }
    const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
    if (config.local_rank >= count) {
      throw InputError(
          fmt::format("{} processes on this machine need {} GPUs, one each, but it has {}; give "
                      "--nproc-per-node {} at most",
                      config.local_rank + 1, config.local_rank + 1, count, count));
    }
    run.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(config.local_rank));
  }
}

}  // namespace

ResolvedRun resolve(const RunConfig& given) {
  // The command line splits --recipes at every comma, a recipe's own modifiers' included.
  RunConfig config = given;
  config.recipes = kernels::regroup_recipe_list(given.recipes);
  ResolvedRun run;
  run.config = config;

  check_run_options(config);
  if (config.sharding != "auto" && !workloads::parse_sharding(config.sharding)) {
    throw InputError(fmt::format(
        "unknown --sharding '{}'; valid: auto (the least that fits), zero1, zero2, zero3",
        config.sharding));
  }
  for (const std::string& name : config.recipes)
    run.recipes.push_back(kernels::parse_recipe(name));
  run.timing_warmup_steps =
      config.warmup_steps >= 0 ? config.warmup_steps : std::min<int64_t>(10, config.steps / 10);
  if (config.trace_step >= 0 && !timing::profiler_available()) {
    throw InputError("--trace-step: this libtorch was built without its profiler (kineto)");
  }
  run.eval_every =
      config.eval_every >= 0 ? config.eval_every : std::max<int64_t>(1, config.steps / 10);

  for (const std::string& text : config.workloads) {
    run.workloads.push_back(resolve_workload(text, config));
  }
  const bool any_model_level = std::any_of(
      run.workloads.begin(), run.workloads.end(),
      [](const ResolvedWorkload& w) { return w.spec.level == workloads::Level::model; });
  if (config.layers > 0 && !any_model_level) {
    throw InputError("--layers applies to model-level workloads, and none is given");
  }
  check_delayed_scaling(run, config);
  run.device = resolve_device(config.device);
  if (config.world_size > 0) {
    resolve_data_parallel(run, config);
  } else if (config.sharding != "auto") {
    throw InputError(fmt::format(
        "--sharding {} applies to data parallel runs; add --nproc-per-node N (or start the "
        "ranks from a launcher)",
        config.sharding));
  }
  for (ResolvedWorkload& w : run.workloads) {
    w.training.fusion = resolve_fusion(config.fusion, run.device);
    w.training.producer_amax = config.producer_amax;
    check_saved_activations(run, w);
  }
  check_cuda_graph(run, config);
  check_memory_snapshot(run, config);
  run.device_memory_gib = env::usable_memory_gib(run.device);
  if (config.memory_budget_gib > 0.0) {
    if (config.memory_budget_gib > run.device_memory_gib && !config.plan_only) {
      throw InputError(fmt::format(
          "--memory-budget-gib {:.1f} is more than {} has ({:.1f} GiB usable); give at most that, "
          "or --no-memory-plan to run past the plan",
          config.memory_budget_gib, run.device.str(), run.device_memory_gib));
    }
    run.device_memory_gib = config.memory_budget_gib;
  }
  for (ResolvedWorkload& w : run.workloads)
    plan_memory(w, run);
  return run;
}

LargestMicroBatch largest_micro_batch(const ResolvedWorkload& w, const ResolvedRun& run,
                                      size_t recipe) {
  workloads::TrainingOptions t = w.training;
  const int64_t limit = kMaxSize / std::max<int64_t>(1, t.seq_len);
  const int64_t largest = largest_fitting(limit, [&](int64_t b) {
    t.micro_batch = b;
    return workloads::estimate_memory(w.spec, w.model, run.recipes.at(recipe), t).total_gib() <=
           run.device_memory_gib;
  });
  return {largest, largest == limit};
}

std::optional<std::string> sharding_of(const ResolvedRun& run, const ResolvedWorkload& w) {
  if (run.config.world_size <= 0) return std::nullopt;
  return fmt::format("{} ({})", workloads::to_string(w.training.sharding),
                     run.device.is_cuda() ? "nccl" : "gloo");
}

nlohmann::json run_config_json(const ResolvedRun& run, const ResolvedWorkload& w,
                               size_t recipe_index) {
  const kernels::Recipe& recipe = run.recipes.at(recipe_index);
  const workloads::ModelConfig& m = w.model;
  const workloads::TrainingOptions& t = w.training;
  const workloads::MemoryEstimate& memory = w.memory.at(recipe_index);
  nlohmann::json recipe_json{
      {"name", recipe.name},
      {"fprop", kernels::describe(recipe.gemms.fprop)},
      {"dgrad", kernels::describe(recipe.gemms.dgrad)},
      {"wgrad", kernels::describe(recipe.gemms.wgrad)},
      {"keep_bf16", nlohmann::json::array()},
  };
  for (const kernels::KeepRule& rule : recipe.keep_bf16) {
    recipe_json["keep_bf16"].push_back({{"pattern", rule.pattern}, {"reason", rule.reason}});
  }
  nlohmann::json model_json{{"name", m.name},
                            {"family", m.family},
                            {"vocab_size", m.vocab_size},
                            {"hidden_size", m.hidden_size},
                            {"intermediate_size", m.intermediate_size},
                            {"num_layers", m.num_layers},
                            {"published_layers", m.published_layers},
                            {"num_heads", m.num_heads},
                            {"num_kv_heads", m.num_kv_heads},
                            {"head_dim", m.head_dim},
                            {"rope_theta", m.rope_theta},
                            {"rope_scaling", m.rope_scaling.type},
                            {"norm_eps", m.norm_eps},
                            {"tie_embeddings", m.tie_embeddings},
                            {"qk_norm", m.qk_norm},
                            {"num_experts", m.num_experts},
                            {"experts_per_token", m.experts_per_token},
                            {"parameters", m.parameter_count()},
                            {"active_parameters", m.parameter_count(true)},
                            {"flops_per_token", m.flops_per_token(t.seq_len)}};
  if (!w.model_notes.empty()) model_json["not_modeled"] = w.model_notes;
  nlohmann::json json{
      {"workload", w.spec.text()},
      {"level", std::string(workloads::to_string(w.spec.level))},
      {"recipe", recipe_json},
      {"model", model_json},
      {"training",
       {{"micro_batch", t.micro_batch},
        {"grad_accum", t.grad_accum},
        {"quantized_weights", t.grad_accum > 1 && t.weight_cache ? "once a step" : "every forward"},
        {"gradient_accumulation_fusion", t.gradient_accumulation_fusion},
        {"embedding_gradient_by_rows",
         w.spec.level == workloads::Level::model &&
             workloads::embedding_gradient_by_rows(t, m.tie_embeddings)},
        {"seq_len", t.seq_len},
        {"seed", t.seed},
        {"steps", t.total_steps},
        {"optimizer", "adamw"},
        {"lr", t.lr},
        {"lr_schedule", "linear warm-up, cosine decay"},
        {"lr_warmup_steps", t.lr_warmup_steps},
        {"min_lr_ratio", t.min_lr_ratio},
        {"weight_decay", t.weight_decay},
        {"betas", {t.beta1, t.beta2}},
        {"grad_clip", t.grad_clip},
        {"activation_checkpointing", t.activation_checkpointing},
        {"checkpointed_layers", workloads::recomputed_layers(t, m.num_layers)},
        {"weight_copies", t.fusion == workloads::Fusion::none ? "none"
                          : t.copies_per_layer && t.activation_checkpointing
                              ? "per layer where recomputed"
                              : "kept"},
        {"fusion", std::string(workloads::to_string(t.fusion))},
        {"producer_amax", t.producer_amax},
        {"eval_every", run.eval_every},
        {"eval_batches", t.eval_batches}}},
      {"data", t.data.text()},
      {"memory_plan",
       {{"total_gib", memory.total_gib()},
        {"weights_gib", memory.weights_gib},
        {"gradients_gib", memory.gradients_gib},
        {"optimizer_gib", memory.optimizer_gib},
        {"weight_copies_gib", memory.weight_copies_gib},
        {"activations_gib", memory.activations_gib},
        {"temporaries_gib", memory.transient_gib},
        {"device_gib", run.device_memory_gib}}},
      {"timing_warmup_steps", run.timing_warmup_steps},
      {"device", run.device.str()},
      {"interleave", w.interleave},
      {"regions", run.config.regions},
      {"cuda_graph", run.config.cuda_graph},
      {"int8_gemm", run.config.int8_gemm},
      {"separate_layout_quantize", run.config.separate_layout_quantize},
      {"memory_plan_enforced", run.config.memory_plan},
      {"memory_budget_gib", run.config.memory_budget_gib},
  };
  if (!w.interleave_note.empty()) json["interleave_note"] = w.interleave_note;
  if (!w.plan_note.empty()) json["memory_plan_note"] = w.plan_note;
  if (const std::optional<std::string> sharding = sharding_of(run, w)) {
    json["training"]["data_parallel"] = {
        {"world_size", run.config.world_size},
        {"sharding", *sharding},
        {"global_batch", t.grad_accum * t.micro_batch * run.config.world_size},
        {"timeout_s", run.config.dist_timeout_s}};
  }
  return json;
}

void to_json(nlohmann::json& json, const RunConfig& c) {
  json = {{"workloads", c.workloads},
          {"recipes", c.recipes},
          {"model", c.model},
          {"layers", c.layers},
          {"steps", c.steps},
          {"warmup_steps", c.warmup_steps},
          {"seed", c.seed},
          {"micro_batch", c.micro_batch},
          {"grad_accum", c.grad_accum},
          {"weight_cache", c.weight_cache},
          {"gradient_accumulation_fusion", c.gradient_accumulation_fusion},
          {"embedding_gradient_by_rows", c.embedding_gradient_by_rows},
          {"seq_len", c.seq_len},
          {"lr", c.lr},
          {"activation_checkpointing", c.activation_checkpointing},
          {"checkpoint_layers", c.checkpoint_layers},
          {"data", c.data},
          {"token_dtype", c.token_dtype},
          {"eval_every", c.eval_every},
          {"eval_batches", c.eval_batches},
          {"metrics_every", c.metrics_every},
          {"diagnostics_every", c.diagnostics_every},
          {"device", c.device},
          {"db", c.db},
          {"label", c.label},
          {"regions", c.regions},
          {"cuda_graph", c.cuda_graph},
          {"trace_step", c.trace_step},
          {"memory_snapshot_step", c.memory_snapshot_step},
          {"int8_gemm", c.int8_gemm},
          {"separate_layout_quantize", c.separate_layout_quantize},
          {"memory_budget_gib", c.memory_budget_gib},
          {"fusion", c.fusion},
          {"producer_amax", c.producer_amax},
          {"interleave", c.interleave},
          {"nproc_per_node", c.nproc_per_node},
          {"sharding", c.sharding},
          {"dist_timeout_s", c.dist_timeout_s}};
}

void from_json(const nlohmann::json& json, RunConfig& c) {
  const RunConfig d;
  c.workloads = json.value("workloads", d.workloads);
  c.recipes = json.value("recipes", d.recipes);
  c.model = json.value("model", d.model);
  c.layers = json.value("layers", d.layers);
  c.steps = json.value("steps", d.steps);
  c.warmup_steps = json.value("warmup_steps", d.warmup_steps);
  c.seed = json.value("seed", d.seed);
  c.micro_batch = json.value("micro_batch", d.micro_batch);
  c.grad_accum = json.value("grad_accum", d.grad_accum);
  c.weight_cache = json.value("weight_cache", d.weight_cache);
  c.gradient_accumulation_fusion =
      json.value("gradient_accumulation_fusion", d.gradient_accumulation_fusion);
  c.embedding_gradient_by_rows =
      json.value("embedding_gradient_by_rows", d.embedding_gradient_by_rows);
  c.seq_len = json.value("seq_len", d.seq_len);
  c.lr = json.value("lr", d.lr);
  c.activation_checkpointing = json.value("activation_checkpointing", d.activation_checkpointing);
  c.checkpoint_layers = json.value("checkpoint_layers", d.checkpoint_layers);
  c.data = json.value("data", d.data);
  c.token_dtype = json.value("token_dtype", d.token_dtype);
  c.eval_every = json.value("eval_every", d.eval_every);
  c.eval_batches = json.value("eval_batches", d.eval_batches);
  c.metrics_every = json.value("metrics_every", d.metrics_every);
  c.diagnostics_every = json.value("diagnostics_every", d.diagnostics_every);
  c.device = json.value("device", d.device);
  c.db = json.value("db", d.db);
  c.label = json.value("label", d.label);
  c.regions = json.value("regions", d.regions);
  c.cuda_graph = json.value("cuda_graph", d.cuda_graph);
  c.trace_step = json.value("trace_step", d.trace_step);
  c.memory_snapshot_step = json.value("memory_snapshot_step", d.memory_snapshot_step);
  c.int8_gemm = json.value("int8_gemm", d.int8_gemm);
  c.separate_layout_quantize = json.value("separate_layout_quantize", d.separate_layout_quantize);
  c.nproc_per_node = json.value("nproc_per_node", d.nproc_per_node);
  c.sharding = json.value("sharding", d.sharding);
  c.dist_timeout_s = json.value("dist_timeout_s", d.dist_timeout_s);
  c.memory_budget_gib = json.value("memory_budget_gib", d.memory_budget_gib);
  c.fusion = json.value("fusion", d.fusion);
  c.producer_amax = json.value("producer_amax", d.producer_amax);
  c.interleave = json.value("interleave", d.interleave);
}

}  // namespace lpbench::config
