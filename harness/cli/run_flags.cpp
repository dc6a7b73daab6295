#include "harness/cli/run_flags.h"

namespace lpbench::cli {

CLI::Option* add_run_flags(CLI::App& run, config::RunConfig& config, std::string& label) {
  run.add_option("--workload", config.workloads,
                 "Comma-separated <level>:<model>[:<part>] or gemm:<M>x<N>x<K>; levels: gemm, "
                 "linear, layer, model")
      ->delimiter(',')
      ->capture_default_str();
  run.add_option("--recipes", config.recipes,
                 "Comma-separated recipes, for example bf16,int8-tensor")
      ->delimiter(',')
      ->capture_default_str();
  run.add_option("--model", config.model,
                 "Replace each workload's model: a built-in name or a Hugging Face config.json");
  run.add_option("--layers", config.layers,
                 "Model level: build this many layers at full width (default, or 0: all)");
  run.add_option("--steps", config.steps, "Steps per recipe")->capture_default_str();
  run.add_option("--warmup-steps", config.warmup_steps,
                 "Steps left out of the timing statistics (default: min(10, steps/10))");
  // Checked as text: CLI11 would otherwise wrap a negative seed into a huge unsigned one.
  run.add_option("--seed", config.seed, "Seed of the initial weights and the data")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run.add_option("--micro-batch", config.micro_batch,
                 "Sequences per step (default, or 0: the model's)");
  run.add_option("--seq-len", config.seq_len, "Tokens per sequence (default, or 0: the model's)");
  run.add_option("--grad-accum", config.grad_accum,
                 "Model level: sum the gradients of N micro-batches before each optimizer step "
                 "(a step trains N × --micro-batch sequences a rank); each linear layer "
                 "quantizes its weight once a step")
      ->capture_default_str();
  run.add_flag("!--no-weight-cache", config.weight_cache,
               "With --grad-accum: quantize the weights again at every micro-batch (the ablation "
               "of quantizing them once an optimizer step; the same bits)");
  run.add_flag("!--no-gradient-accumulation-fusion", config.gradient_accumulation_fusion,
               "Model level, fused: let autograd add each micro-batch's weight gradients into "
               "the summed ones (the ablation of the wgrad products adding into them as they "
               "store)");
  run.add_flag("!--dense-embedding-gradient", config.embedding_gradient_by_rows,
               "Model level, fused: keep the embedding's gradient as a dense table of the "
               "vocabulary (the ablation of keeping it by the rows the step's tokens reached, "
               "which one process with one micro-batch and an untied output layer does; the "
               "same bits)");
  run.add_option("--lr", config.lr, "Peak learning rate (default, or 0: the model's)");
  run.add_flag("--activation-checkpointing", config.activation_checkpointing,
               "Model level: recompute each layer's activations in backward");
  run.add_option("--checkpoint-layers", config.checkpoint_layers,
                 "Model level: recompute only the first N layers in backward (implies "
                 "--activation-checkpointing; without either, the memory plan picks the fewest "
                 "layers that make the model fit)");
  run.add_option("--data", config.data,
                 "Tokens: synthetic, a directory made by `lpbench data prepare`, or a token file")
      ->capture_default_str();
  run.add_option("--token-dtype", config.token_dtype, "Of a bare token file: uint16 or uint32")
      ->capture_default_str();
  run.add_option("--eval-every", config.eval_every,
                 "Validation loss every N steps (model level; default steps/10; 0: never)");
  run.add_option("--eval-batches", config.eval_batches, "Validation batches per evaluation")
      ->capture_default_str();
  run.add_option("--metrics-every", config.metrics_every,
                 "Per-step figures such as expert loads every N steps (0: never)")
      ->capture_default_str();
  run.add_option("--device", config.device, "auto, cpu, cuda or cuda:<index>")
      ->capture_default_str();
  run.add_option("--nproc-per-node", config.nproc_per_node,
                 "Data parallel (model workloads): start this many ranks on this machine, one a "
                 "GPU (NCCL), or CPU ranks with --device cpu (Gloo); the optimizer state is "
                 "sharded over them. A launcher's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                 "MASTER_PORT (torchrun, SLURM) make this process one rank instead")
      ->capture_default_str();
  run.add_option("--sharding", config.sharding,
                 "Data parallel: zero1 (AdamW's moments sharded), zero2 (gradients too, reduced "
                 "layer by layer during backward), zero3 (the layers' weights too, gathered "
                 "layer by layer), or auto: the least of them that the memory plan finds to "
                 "fit. zero2 and zero3 recompute each layer in backward (activation "
                 "checkpointing)")
      ->capture_default_str();
  run.add_option("--dist-timeout", config.dist_timeout_s,
                 "Data parallel: seconds the rendezvous and each collective wait for the other "
                 "ranks before the run fails")
      ->capture_default_str();
  run.add_option("--db", config.db, "SQLite database to record into")->capture_default_str();
  run.add_flag("--regions", config.regions,
               "Time the named regions (forward, gemm, quantize, ...) of every step with CUDA "
               "events; `lpbench report` shows the hotspots");
  run.add_flag("--cuda-graph", config.cuda_graph,
               "Layer and linear workloads on a GPU: capture the step (forward and backward) "
               "into a CUDA graph after the first step and replay it for the steps after, so "
               "that what is timed is the GPU's work without the host's launch gaps; every "
               "recipe of the sweep alike. Not with --regions or --diagnostics, nor with "
               "recipes whose step changes on the host (stochastic rounding, int8-fallback) or "
               "MoE layers; amax-history replays, its history moving on on the GPU");
  run.add_option("--trace-step", config.trace_step,
                 "Capture this step with torch's profiler into a Chrome/Perfetto trace beside "
                 "the database");
  run.add_option("--memory-snapshot", config.memory_snapshot_step,
                 "GPU: record what the CUDA caching allocator does during this step (each "
                 "allocation, free and mapping, named by its lpbench region) and save it with "
                 "the allocator's state as torch's memory snapshot beside the database, for "
                 "pytorch.org/memory_viz; the step is left out of the timing statistics");
  run.add_option("--int8-gemm", config.int8_gemm,
                 "GPU INT8 GEMM: auto (wgmma on Hopper where it takes the operands, cublaslt "
                 "elsewhere); for tensor and row scales cublaslt, lpbench or torch (the stock "
                 "at::_int_mm, a baseline); wgmma: lpbench's Hopper kernel for tensor, row and "
                 "block scales (sm_90 only, cublaslt elsewhere); all give the same bits")
      ->capture_default_str();
  run.add_flag("--separate-layout-quantize", config.separate_layout_quantize,
               "Quantize each layout of an operand (X and its transpose, W and Wᵀ, dY and dYᵀ) "
               "in its own pass, where by default one pass writes both: an ablation of that "
               "fusion; the same bits either way");
  run.add_option("--fusion", config.fusion,
                 "Operators: fused (lpbench's one-pass norm, RoPE, SwiGLU, attention glue, "
                 "BF16 weight copies, fused AdamW and loss), none (the readable libtorch "
                 "composition, the ablation) or auto (fused on a GPU, none on the CPU)")
      ->capture_default_str();
  run.add_flag("!--no-producer-amax", config.producer_amax,
               "Fused, tensorwise recipes: quantize each operand with an amax pass of its own "
               "instead of the max |x| that the norm, SwiGLU and RoPE kernels report as they "
               "write it, and under delayed scaling let the norms and SwiGLU write their "
               "product's quantized X in place of their output (the ablation: the same bits, "
               "one more read of each such operand)");
  run.add_flag("!--no-memory-plan", config.memory_plan,
               "Run what the memory plan says cannot fit (to test the device's limit: the run "
               "ends oom and the sweep goes on)");
  run.add_option("--memory-budget-gib", config.memory_budget_gib,
                 "Plan memory against this many GiB instead of the device's (a GPU shared with "
                 "other jobs): what does not fit is refused, and recipes that do not fit together "
                 "run one after another, each built when its turn comes. With --dry-run it may "
                 "exceed this machine's memory: plan for a GPU from a machine without one (add "
                 "--fusion fused, the GPU's default)");
  run.add_flag("!--no-interleave", config.interleave,
               "Run the recipes one after another instead of step by step in turn");
  return run.add_option("--label", label,
                        "Record the sweep in a named series, e.g. nightly (reports and compare "
                        "select by it)");
}

}  // namespace lpbench::cli
