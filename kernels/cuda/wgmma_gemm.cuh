#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/scaled_gemm.cuh"
#include "kernels/cuda/types.cuh"

// lpbench's Hopper INT8 GEMM: wgmma (s8·s8 → s32) fed by TMA through a multi-stage shared-memory
// ring, one producer warpgroup and two consumer warpgroups, a persistent tile scheduler, and the
// scaling epilogues of ScaledGemmArgs fused in. sm_90 only (compiled for sm_90a); callers check
// wgmma_supported() and use the other paths elsewhere.
namespace lpbench::cuda {

// What is computed: C[m,n] = A[m,k]·B[n,k]ᵀ (TN, both K-contiguous), its scaling and output.
enum class WgmmaScaling { none, tensor, row, block };  // none: INT32 out, no scales

struct WgmmaProblem {
  int64_t m = 0, n = 0, k = 0;
  WgmmaScaling scaling = WgmmaScaling::tensor;
  DType out = DType::bf16;  // bf16, fp32; int32 with scaling none
  bool bias = false;
};

// How it is computed. tile_m is fixed at 128 (two consumer warpgroups of 64 rows) and tile_k at
// 128 (one 128-byte swizzle row of INT8, also the K block of block scaling); tile_n is 128 or
// 256 (256 only without block scaling: its FP32 accumulators would not fit in registers beside
// the INT32 ones). cluster_m 2 pairs CTAs on vertically adjacent tiles that share B by TMA
// multicast (cluster_n is 1); the heuristic leaves it at 1: on the H100 it won on 2 of the 14
// llama2-7b shapes at 16384 tokens and lost or tied on the rest (docs/perf-log.md §6d).
struct WgmmaConfig {
  int tile_m = 128;
  int tile_n = 128;
  int tile_k = 128;
  int stages = 4;
  int cluster_m = 1, cluster_n = 1;
  int consumer_warpgroups = 2;
  // Ping-pong (tile_n 128, no block scaling): each consumer warpgroup computes whole tiles, the
  // two in turn, so that one stores its tile while the other's MMAs run. Otherwise the two split
  // each tile's rows and store together.
  bool pingpong = false;
};

std::string to_string(WgmmaScaling s);
std::string to_string(const WgmmaProblem& p);
std::string to_string(const WgmmaConfig& c);

// The problem of a ScaledGemmArgs (tensor/row/block from its scale shapes).
WgmmaProblem wgmma_problem(const ScaledGemmArgs& args);

// The shape heuristic: without block scaling, ping-pong on 128×128 tiles (the deepest ring)
// where K is under 96 tiles and there are two tiles per SM or more; else 128×256 tiles where
// they still give every SM a tile (fewer B re-reads, more MMA per byte of shared memory), else
// 128×128; block scaling always 128×128; at most 4 stages but for ping-pong; no clusters.
// `sm_count` is the device's multiprocessor count.
WgmmaConfig select_wgmma_config(const WgmmaProblem& problem, int sm_count);

// Empty when `config` can run `problem`, else what is wrong (one line).
std::string wgmma_config_error(const WgmmaProblem& problem, const WgmmaConfig& config);

// How many pipeline stages fit in shared memory (227 KiB a CTA on H100/H200) for every mode of a
// tile width, or for ping-pong (128-wide tiles, never block mode's per-column B scales, which
// cost the 128-wide ring its seventh stage).
int wgmma_max_stages(int tile_n, bool pingpong = false);

// Whether the current device runs these kernels (compute capability 9.0: H100, H200, GH200),
// cached per device.
bool wgmma_supported();

// Scaled GEMM with the numerics of scaled_gemm_mma (bit for bit: the CPU reference's). Requires
// K % 16 == 0 (TMA row pitch) and 16-byte aligned A and B; any M, N. kblock 0, 128, 256, 512 or
// 1024. `config` null: select_wgmma_config. Throws std::invalid_argument for bad arguments (checked
// before any CUDA call) and when the device is not sm_90.
void wgmma_scaled_gemm(const ScaledGemmArgs& args, cudaStream_t stream,
                       const WgmmaConfig* config = nullptr);

// The pure-integer variant: c[m,n] = a[m,k]·b[n,k]ᵀ in INT32, exact for k ≤ 133143.
void wgmma_int8_gemm(const int8_t* a, const int8_t* b, int32_t* c, int64_t m, int64_t n, int64_t k,
                     cudaStream_t stream, const WgmmaConfig* config = nullptr);

// The config that wgmma_scaled_gemm / wgmma_int8_gemm would run for `problem` on the current
// device (for recording with results).
WgmmaConfig wgmma_config_for(const WgmmaProblem& problem);

}  // namespace lpbench::cuda
