#include "workloads/models/checkpoint.h"

#include <torch/autograd.h>
#include <torch/custom_class.h>

namespace lpbench::workloads {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Carries the block through the autograd context, which holds IValues.
struct BlockHolder : torch::CustomClassHolder {
  explicit BlockHolder(Block b) : block(std::move(b)) {}
  Block block;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const c10::intrusive_ptr<BlockHolder>& holder) {
    // Gradient mode is off inside a custom function's forward: nothing is recorded.
    ctx->save_for_backward({x});
    ctx->saved_data["block"] = c10::IValue::make_capsule(holder);
    return holder->block(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder =
        c10::static_intrusive_pointer_cast<BlockHolder>(ctx->saved_data["block"].toCapsule());
    const torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = holder->block(x);
    }
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(const Block& block, const torch::Tensor& x) {
  return CheckpointFunction::apply(x, c10::make_intrusive<BlockHolder>(block));
}

}  // namespace lpbench::workloads
