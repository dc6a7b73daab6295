#pragma once

// RoPE's tables as the attention tests build them.
#include <ATen/ATen.h>

#include <utility>

namespace lpbench::test_support {

// cos and sin of position · 10000^(−2i / head_dim), [seq, head_dim / 2], FP32 on the CPU.
inline std::pair<at::Tensor, at::Tensor> rope_tables(int64_t seq, int64_t head_dim) {
  const at::Tensor angles = at::outer(
      at::arange(seq, at::kDouble),
      at::pow(1e4, -at::arange(0, head_dim, 2, at::kDouble) / static_cast<double>(head_dim)));
  return {angles.cos().to(at::kFloat), angles.sin().to(at::kFloat)};
}

}  // namespace lpbench::test_support
