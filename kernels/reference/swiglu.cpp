#include "kernels/reference/swiglu.h"

namespace lpbench::kernels::reference {

namespace {

std::pair<at::Tensor, at::Tensor> halves(const at::Tensor& gate_up) {
  const int64_t inner = gate_up.size(-1) / 2;
  return {gate_up.narrow(-1, 0, inner), gate_up.narrow(-1, inner, inner)};
}

}  // namespace

at::Tensor swiglu_forward(const at::Tensor& gate_up) {
  const auto [gate, up] = halves(gate_up);
  return at::silu(gate) * up;
}

at::Tensor swiglu_backward(const at::Tensor& d_out, const at::Tensor& gate_up) {
  const auto [gate, up] = halves(gate_up);
  const at::Tensor g = gate.to(at::kFloat);
  const at::Tensor d = d_out.to(at::kFloat);
  const at::Tensor sigmoid = at::sigmoid(g);
  const at::Tensor d_up = d * at::silu(gate).to(at::kFloat);
  const at::Tensor d_gate = d * up.to(at::kFloat) * sigmoid * (1.0 + g * (1.0 - sigmoid));
  return at::cat({d_gate, d_up}, -1).to(gate_up.scalar_type());
}

}  // namespace lpbench::kernels::reference
