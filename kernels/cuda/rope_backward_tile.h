#pragma once

// The heads and sequences that the tile kernel computing RoPE's backward as it quantizes the
// gradient (quantize_rope_backward_tensorwise, quantize_tensorwise.cu) takes: a tile holds whole
// heads of one of dQ, dK and dV, 128 columns for 128 tokens of one sequence (512 columns for 32
// tokens where every part's heads fill 512: the kernel chooses). Plain C++, so that
// the workloads can say where the kernel applies without CUDA (kernels/torch/quantize.h).
#include <cstdint>

namespace lpbench::cuda {

// Heads of 16 to 128 elements dividing 128, each part's heads a whole number of 128 columns,
// sequences a multiple of 128 tokens.
constexpr bool rope_backward_tile_takes(int64_t head_dim, int64_t q_heads, int64_t k_heads,
                                        int64_t v_heads, int64_t seq) {
  const bool heads = head_dim >= 16 && head_dim % 16 == 0 && 128 % head_dim == 0;
  const auto whole = [head_dim](int64_t n) { return n > 0 && n * head_dim % 128 == 0; };
  return heads && whole(q_heads) && whole(k_heads) && whole(v_heads) && seq > 0 && seq % 128 == 0;
}

}  // namespace lpbench::cuda
