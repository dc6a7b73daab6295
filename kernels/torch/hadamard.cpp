#include "kernels/torch/hadamard.h"

#include <cmath>

namespace lpbench::kernels {

namespace {

// H_b / √b by Sylvester's doubling, [[H, H], [H, -H]], in FP32 on `options`' device.
at::Tensor hadamard_matrix(int64_t block, const at::TensorOptions& options) {
  at::Tensor h = at::ones({1, 1}, options.dtype(at::kFloat));
  while (h.size(0) < block) {
    h = at::cat({at::cat({h, h}, 1), at::cat({h, -h}, 1)}, 0);
  }
  return h / std::sqrt(static_cast<double>(block));
}

}  // namespace

at::Tensor hadamard_rotate(const at::Tensor& m, int64_t block) {
  TORCH_CHECK(m.dim() == 2, "hadamard_rotate: a 2-D tensor, got ", m.sizes());
  TORCH_CHECK(block >= 2 && block <= 4096 && (block & (block - 1)) == 0,
              "hadamard_rotate: the block must be a power of two from 2 to 4096, got ", block);
  const int64_t rows = m.size(0);
  const int64_t cols = m.size(1);
  at::Tensor out = m.to(at::kFloat).contiguous();
  const int64_t whole = cols / block * block;
  if (whole == 0) return out;
  const at::Tensor h = hadamard_matrix(block, out.options());
  const at::Tensor head = out.narrow(1, 0, whole).reshape({rows, whole / block, block});
  at::Tensor rotated = at::matmul(head, h).reshape({rows, whole});
  if (whole == cols) return rotated;
  return at::cat({rotated, out.narrow(1, whole, cols - whole)}, 1);
}

}  // namespace lpbench::kernels
