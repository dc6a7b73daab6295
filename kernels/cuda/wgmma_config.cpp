// The problem and config types of the wgmma GEMM, their printing and the shape heuristic (host
// code; the shared-memory arithmetic lives with the kernel, in wgmma_max_stages).
#include <algorithm>
#include <string>

#include "kernels/cuda/wgmma_gemm.cuh"

// Timing experiments only (LPBENCH_WGMMA_DIAG, as wgmma_gemm.cu's knobs): PINGPONG=0 brings back
// the heuristic as it was before ping-pong, and PP_STAGES=S gives ping-pong a ring of S stages
// instead of kPingpongStages, PP_MAX_KTILES=T moves kPingpongMaxKTiles to T, for same-machine
// comparisons of whole steps.
#ifndef LPBENCH_WGMMA_PINGPONG
#define LPBENCH_WGMMA_PINGPONG 1
#endif
#ifndef LPBENCH_WGMMA_PP_STAGES
#define LPBENCH_WGMMA_PP_STAGES 0
#endif
#ifndef LPBENCH_WGMMA_PP_MAX_KTILES
#define LPBENCH_WGMMA_PP_MAX_KTILES 0
#endif

namespace lpbench::cuda {

namespace {

// Deeper rings stop paying once TMA latency is hidden, and past that they cost: on the H100 the
// tensorwise kernel on 128 × 128 tiles ran 5–20 % faster with 4 stages than with 7 (3: slower),
// and block mode ran the same with 3, 4 or 6 (docs/perf-log.md §6b).
constexpr int kMaxStages = 4;
// K tiles (of 128) below which the ping-pong config is chosen: K = 11008 is 86 tiles, 12288 is 96.
constexpr int64_t kPingpongMaxKTiles =
    LPBENCH_WGMMA_PP_MAX_KTILES > 0 ? LPBENCH_WGMMA_PP_MAX_KTILES : 96;
// Ping-pong's ring: 7 stages fit (wgmma_max_stages), but on the H200 the seventh ran the layer's
// products the same or up to 9 % slower and the layer's step 1 % slower (docs/perf-log.md §24).
constexpr int kPingpongStages = 6;

bool varies_along_k(const ScaledGemmArgs& a) {
  return a.kblock != 0;
}

}  // namespace

std::string to_string(WgmmaScaling s) {
  switch (s) {
    case WgmmaScaling::none:
      return "none";
    case WgmmaScaling::tensor:
      return "tensor";
    case WgmmaScaling::row:
      return "row";
    case WgmmaScaling::block:
      return "block";
  }
  return "?";
}

std::string to_string(const WgmmaProblem& p) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " " +
         to_string(p.scaling) + " -> " + dtype_name(p.out) + (p.bias ? " +bias" : "");
}

std::string to_string(const WgmmaConfig& c) {
  return "tile " + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" +
         std::to_string(c.tile_k) + ", " + std::to_string(c.stages) + " stages, cluster " +
         std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n) + ", " +
         std::to_string(c.consumer_warpgroups) + " consumer warpgroups" +
         (c.pingpong ? " (ping-pong)" : "");
}

WgmmaProblem wgmma_problem(const ScaledGemmArgs& args) {
  WgmmaProblem p;
  p.m = args.m;
  p.n = args.n;
  p.k = args.k;
  if (varies_along_k(args)) {
    p.scaling = WgmmaScaling::block;
  } else if (args.a_block_rows == 0 && args.b_block_rows == 0) {
    p.scaling = WgmmaScaling::tensor;
  } else {
    p.scaling = WgmmaScaling::row;  // any per-row-block scales without K blocks
  }
  p.out = args.c_type;
  p.bias = args.bias != nullptr;
  return p;
}

WgmmaConfig select_wgmma_config(const WgmmaProblem& problem, int sm_count) {
  WgmmaConfig c;
  const bool blocked = problem.scaling == WgmmaScaling::block;
  const int64_t tiles_m = (problem.m + 127) / 128;
  const int64_t ktiles = (problem.k + 127) / 128;
  // Ping-pong where every CTA gets two tiles or more (one per warpgroup) and K is short enough
  // that storing a tile weighs: on the H200 at 4096 tokens it beat the 128 × 256 tile on the
  // llama2-7b shapes with K ≤ 11008 by up to 18 % (−3 % on one), and lost 11 % at K = 12288
  // (docs/perf-log.md §23).
  if (LPBENCH_WGMMA_PINGPONG && !blocked && ktiles < kPingpongMaxKTiles &&
      tiles_m * ((problem.n + 127) / 128) >= 2LL * sm_count) {
    c.tile_n = 128;
    c.pingpong = true;
    c.stages = LPBENCH_WGMMA_PP_STAGES > 0 ? LPBENCH_WGMMA_PP_STAGES : kPingpongStages;
    return c;
  }
  const int64_t wide_tiles = tiles_m * ((problem.n + 255) / 256);
  c.tile_n = !blocked && wide_tiles >= sm_count ? 256 : 128;
  // More stages than K tiles only matter across tiles (the producer runs ahead); keep at least 2.
  c.stages = std::min(wgmma_max_stages(c.tile_n), kMaxStages);
  if (ktiles < c.stages && tiles_m * ((problem.n + c.tile_n - 1) / c.tile_n) <= sm_count) {
    c.stages = std::max<int>(2, static_cast<int>(ktiles));
  }
  return c;
}

std::string wgmma_config_error(const WgmmaProblem& problem, const WgmmaConfig& c) {
  const bool blocked = problem.scaling == WgmmaScaling::block;
  if (c.tile_m != 128 || c.tile_k != 128) return "wgmma config: tile_m and tile_k must be 128";
  if (c.tile_n != 128 && c.tile_n != 256) return "wgmma config: tile_n must be 128 or 256";
  if (blocked && c.tile_n != 128) {
    return "wgmma config: block scaling takes tile_n 128 (FP32 and INT32 accumulators of 256 "
           "columns exceed the register file)";
  }
  if ((c.cluster_m != 1 && c.cluster_m != 2) || c.cluster_n != 1) {
    return "wgmma config: clusters are 1x1 or 2x1 (two CTAs on adjacent tile rows sharing B), "
           "got " +
           std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n);
  }
  if (c.consumer_warpgroups != 2) return "wgmma config: 2 consumer warpgroups only";
  if (c.pingpong && (blocked || c.tile_n != 128)) {
    return "wgmma config: ping-pong takes tile_n 128 and no block scaling (a warpgroup holds a "
           "whole tile's accumulators)";
  }
  const int most = wgmma_max_stages(c.tile_n, c.pingpong);
  if (c.stages < 2 || c.stages > most) {
    return "wgmma config: stages must be in [2, " + std::to_string(most) + "] for tile_n " +
           std::to_string(c.tile_n) + (blocked ? " with block scales" : "") +
           (c.pingpong ? " in ping-pong" : "") + ", got " + std::to_string(c.stages);
  }
  if (problem.scaling == WgmmaScaling::none && problem.out != DType::int32) {
    return "wgmma config: unscaled products are INT32";
  }
  return "";
}

}  // namespace lpbench::cuda
