#include "workloads/models/checkpoint.h"

#include <torch/autograd.h>
#include <torch/custom_class.h>

namespace lpbench::workloads {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Carries the block through the autograd context, which holds IValues.
struct BlockHolder : torch::CustomClassHolder {
  BlockHolder(Block b, BlockHooks h) : block(std::move(b)), hooks(std::move(h)) {}
  Block block;
  BlockHooks hooks;
};

void call(const std::function<void()>& hook) {
  if (hook) hook();
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const c10::intrusive_ptr<BlockHolder>& holder) {
    // Gradient mode is off inside a custom function's forward: nothing is recorded.
    ctx->save_for_backward({x});
    ctx->saved_data["block"] = c10::IValue::make_capsule(holder);
    call(holder->hooks.before_forward);
    torch::Tensor y = holder->block(x);
    call(holder->hooks.after_forward);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder =
        c10::static_intrusive_pointer_cast<BlockHolder>(ctx->saved_data["block"].toCapsule());
    const torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    call(holder->hooks.before_backward);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = holder->block(x);
    }
    torch::autograd::backward({y}, {grad_outputs[0]});
    call(holder->hooks.after_backward);
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(const Block& block, const torch::Tensor& x, BlockHooks hooks) {
  return CheckpointFunction::apply(x, c10::make_intrusive<BlockHolder>(block, std::move(hooks)));
}

}  // namespace lpbench::workloads
