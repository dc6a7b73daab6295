#include "kernels/reference/hadamard.h"

#include <cmath>

namespace lpbench::kernels::reference {

at::Tensor hadamard_rotate(const at::Tensor& m, int64_t block) {
  TORCH_CHECK(m.dim() == 2, "hadamard_rotate: a 2-D tensor, got ", m.sizes());
  TORCH_CHECK(block >= 2 && block <= 4096 && (block & (block - 1)) == 0,
              "hadamard_rotate: the block must be a power of two from 2 to 4096, got ", block);
  const int64_t rows = m.size(0);
  const int64_t cols = m.size(1);
  at::Tensor out = m.to(at::kFloat).contiguous();
  const int64_t whole = cols / block * block;
  if (whole == 0) return out;
  at::Tensor head = out.narrow(1, 0, whole).contiguous();
  for (int64_t s = 1; s < block; s *= 2) {
    // [rows, groups of 2s, lo or hi, s]: the pair of index i is i + s, bit s of i clear.
    const at::Tensor pairs = head.view({rows, whole / (2 * s), 2, s});
    const at::Tensor lo = pairs.select(2, 0);
    const at::Tensor hi = pairs.select(2, 1);
    head = at::stack({lo + hi, lo - hi}, 2).view({rows, whole});
  }
  // The FP32 multiplier as a double holds it exactly; ATen multiplies FP32 by it in FP32.
  const float norm = static_cast<float>(1.0 / std::sqrt(static_cast<double>(block)));
  head = head.mul(static_cast<double>(norm));
  if (whole == cols) return head;
  return at::cat({head, out.narrow(1, whole, cols - whole)}, 1);
}

}  // namespace lpbench::kernels::reference
