// The problem and config types of the wgmma GEMM, their printing and the shape heuristic (host
// code; the shared-memory arithmetic lives with the kernel, in wgmma_max_stages).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/wgmma_gemm.cuh"

namespace lpbench::cuda {

namespace {

// Deeper rings stop paying once TMA latency is hidden, and past that they cost: on the H100 the
// tensorwise kernel on 128 × 128 tiles ran 5–20 % faster with 4 stages than with 7 (3: slower),
// and block mode ran the same with 3, 4 or 6 (docs/perf-log.md §6b).
constexpr int kMaxStages = 4;

bool varies_along_k(const ScaledGemmArgs& a) {
  return a.kblock != 0;
}

// The stage count of a tile width: at most kMaxStages; more stages than K tiles only matter
// across tiles (the producer runs ahead), so a grid of one wave keeps ktiles, at least 2.
int stages_for(const WgmmaProblem& problem, int tile_n, int sm_count) {
  const int64_t tiles = ((problem.m + 127) / 128) * ((problem.n + tile_n - 1) / tile_n);
  const int64_t ktiles = (problem.k + 127) / 128;
  int stages = std::min(wgmma_max_stages(tile_n), kMaxStages);
  if (ktiles < stages && tiles <= sm_count) stages = std::max<int>(2, static_cast<int>(ktiles));
  return stages;
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
         to_string(p.scaling) + (p.column_b ? " (B per column)" : "") + " -> " + dtype_name(p.out) +
         (p.bias ? " +bias" : "");
}

std::string to_string(const WgmmaConfig& c) {
  return "tile " + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" +
         std::to_string(c.tile_k) + ", " + std::to_string(c.stages) + " stages, cluster " +
         std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n) + ", " +
         std::to_string(c.consumer_warpgroups) + " consumer warpgroups";
}

WgmmaProblem wgmma_problem(const ScaledGemmArgs& args) {
  WgmmaProblem p;
  p.m = args.m;
  p.n = args.n;
  p.k = args.k;
  if (varies_along_k(args)) {
    p.scaling = WgmmaScaling::block;
    p.column_b = args.b_block_rows % 128 != 0;
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
  const int64_t wide_tiles = tiles_m * ((problem.n + 255) / 256);
  c.tile_n = !blocked && wide_tiles >= sm_count ? 256 : 128;
  c.stages = stages_for(problem, c.tile_n, sm_count);
  return c;
}

std::vector<WgmmaConfig> wgmma_candidates(const WgmmaProblem& problem, int sm_count) {
  std::vector<WgmmaConfig> out{select_wgmma_config(problem, sm_count)};
  const auto same = [](const WgmmaConfig& x, const WgmmaConfig& y) {
    return x.tile_n == y.tile_n && x.stages == y.stages && x.cluster_m == y.cluster_m;
  };
  const bool two_rows = problem.m > 128;
  for (const int tile_n : {256, 128}) {
    for (const int cluster_m : {1, 2}) {
      if (cluster_m == 2 && !two_rows) continue;
      WgmmaConfig c;
      c.tile_n = tile_n;
      c.cluster_m = cluster_m;
      c.stages = stages_for(problem, tile_n, sm_count);
      if (!wgmma_config_error(problem, c).empty()) continue;
      if (std::none_of(out.begin(), out.end(), [&](const WgmmaConfig& o) { return same(o, c); })) {
        out.push_back(c);
      }
    }
  }
  return out;
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
  const int most = wgmma_max_stages(c.tile_n);
  if (c.stages < 2 || c.stages > most) {
    return "wgmma config: stages must be in [2, " + std::to_string(most) + "] for tile_n " +
           std::to_string(c.tile_n) + (blocked ? " with block scales" : "") + ", got " +
           std::to_string(c.stages);
  }
  if (problem.scaling == WgmmaScaling::none && problem.out != DType::int32) {
    return "wgmma config: unscaled products are INT32";
  }
  return "";
}

}  // namespace lpbench::cuda
