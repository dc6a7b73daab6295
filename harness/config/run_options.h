#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// The options of `lpbench run` and the checks that need neither torch nor a file: kept apart from
// run_config.h so that the command line's parsing and validation build without libtorch (the
// fuzz targets in tests/fuzz compile them with clang).
namespace lpbench::config {

// What `lpbench run` was asked for, as the command line gives it. Zero means "the default":
// the model's size, depth and learning rate, or a share of the steps.
struct RunConfig {
  std::vector<std::string> workloads{"model:tiny"};
  std::vector<std::string> recipes{"bf16", "int8-tensor"};
  std::string model;   // replaces every workload's model (a name or a config.json)
  int64_t layers = 0;  // model level: the depth to build (full width)
  int64_t steps = 200;
  int64_t warmup_steps = -1;  // steps left out of the timing statistics; -1: min(10, steps / 10)
  uint64_t seed = 0;
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
  int64_t grad_accum = 1;    // model level: micro-batches a step (gradient accumulation)
  bool weight_cache = true;  // with grad_accum > 1: quantize each weight once a step
  // Fused: each wgrad product adds into the weight's defined FP32 gradient as it stores.
  bool gradient_accumulation_fusion = true;
  // Fused, one process, one micro-batch: the embedding's gradient by rows (off: dense).
  bool embedding_gradient_by_rows = true;
  double lr = 0.0;
  bool activation_checkpointing = false;
  int64_t checkpoint_layers = 0;   // model level: recompute only the first N layers (0: as above)
  std::string data = "synthetic";  // synthetic, a prepared directory, or a token file
  std::string token_dtype = "uint16";
  int64_t eval_every = -1;  // validation every N steps (model level); -1: steps / 10; 0: never
  int64_t eval_batches = 4;
  int64_t metrics_every = 10;     // per-step figures (expert loads) every N steps; 0: never
  int64_t diagnostics_every = 0;  // quantization diagnostics every N steps (and the last); 0: off
  std::string device = "auto";    // auto, cpu, cuda, cuda:N
  std::string db = "lpbench.db";
  std::string label;               // a sweep label, e.g. "nightly"
  bool regions = false;            // time the named regions with CUDA events, per step
  int64_t trace_step = -1;         // capture this step with torch's profiler; -1: none
  std::string int8_gemm = "auto";  // GPU INT8 GEMM: auto (wgmma on sm_90, else cublaslt),
                                   // cublaslt, lpbench, torch (at::_int_mm, the stock baseline)
                                   // for tensor/row scales, wgmma (sm_90: also block scales)
  bool memory_plan = true;         // refuse what cannot fit; off only to test the device's limit
  // Record this step's CUDA caching allocator history and save it as a memory snapshot; -1: none.
  int64_t memory_snapshot_step = -1;
  // Plan memory against this many GiB instead of the device's (a GPU shared with other jobs, or
  // a smaller GPU's budget); 0: the device's usable memory.
  double memory_budget_gib = 0.0;
  // Layer and linear levels on a GPU: capture the step once into a CUDA graph after the first
  // step and replay it, so that no step waits on the host's launches (every recipe alike).
  bool cuda_graph = false;
  // --dry-run: resolve and plan, run nothing. The budget may then exceed this machine's memory
  // (planning for a GPU from a machine without one).
  bool plan_only = false;
  // Quantize an operand's two layouts (X and Xᵀ, ...) in separate passes even where one pass
  // could write both: an ablation of that fusion, the same bits either way.
  bool separate_layout_quantize = false;
  bool interleave = true;  // alternate recipes step by step, so machine drift hits all alike
  // The operator set: fused (lpbench's kernels, BF16 weight copies, the fused optimizer and
  // loss), none (the readable libtorch composition: the ablation), or auto (fused on a GPU).
  std::string fusion = "auto";
  // Fused: the norm, SwiGLU and RoPE kernels report max |x| of the operands a tensorwise recipe
  // quantizes, so the quantizer skips its amax pass (--no-producer-amax: the ablation).
  bool producer_amax = true;
  // Data parallel (model level): processes to start on this machine, one a GPU (or CPU ranks on
  // Gloo with --device cpu); 1: one process, unless a launcher's environment (WORLD_SIZE, RANK,
  // LOCAL_RANK, MASTER_ADDR, MASTER_PORT) says this process is one rank of several.
  int64_t nproc_per_node = 1;
  // Data parallel: what each rank keeps of the model's state (workload.h's Sharding), or auto:
  // the least sharding the memory plan finds to fit (zero1, else zero2, else zero3).
  std::string sharding = "auto";
  // How long the rendezvous and each collective may wait for the other ranks.
  int64_t dist_timeout_s = 300;
  // Set by the launch, not by a flag: the ranks joined through c10d (0: one process, no group),
  // this process's rank and the GPU index on its machine.
  int64_t world_size = 0;
  int64_t rank = 0;
  int64_t local_rank = 0;
};

// Throws InputError for the first option out of its range (sizes, steps, recipes, learning
// rate, INT8 GEMM backend), naming it and what is valid. Touches nothing.
void check_run_options(const RunConfig& config);

// Throws InputError "<flag> must be between <min> and <max>, got <value>" where value is outside
// [min, max]; `zero_means` (where the range starts at 0) says what 0 stands for, after the 0.
void check_range(std::string_view flag, int64_t value, int64_t min, int64_t max,
                 std::string_view zero_means = {});

}  // namespace lpbench::config
