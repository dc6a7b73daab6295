#include "kernels/torch/swiglu.h"

#include <torch/autograd.h>

#include "kernels/profiling/range.h"
#include "kernels/reference/swiglu.h"
#include "kernels/torch/saved_activation.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/swiglu.cuh"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/operand_diagnostics.h"
#endif

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#ifdef LPBENCH_CUDA_GLUE
bool on_kernel(const at::Tensor& gate_up) {
  return gate_up.is_cuda() && gate_up.scalar_type() == at::kBFloat16 &&
         (gate_up.size(-1) / 2) % 8 == 0;
}

cuda::SwigluArgs args_for(const at::Tensor& gate_up) {
  cuda::SwigluArgs a;
  a.gate_up = gate_up.data_ptr();
  a.inner = gate_up.size(-1) / 2;
  a.rows = gate_up.numel() / gate_up.size(-1);
  return a;
}

cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// d gate_up quantized as `dy` says in the backward's place, from gate_up and d_out, where the
// kernel takes it. Returns the stand-in for d gate_up, or undefined (nothing launched).
at::Tensor quantized_gradient(const at::Tensor& gu, const at::Tensor& d,
                              const InputQuantization& dy) {
  if (!producer_quantization() || operand_diagnostics()) return {};
  auto quantized = quantize_swiglu_backward_with_transpose(gu, d, dy);
  if (!quantized) return {};
  at::Tensor stand_in = quantized_stand_in(gu.sizes(), gu.options());
  remember_quantization(stand_in, dy, std::move(quantized->first), std::move(quantized->second));
  return stand_in;
}

// What a kernel call reports of the [rows, cols] tensor it writes: each row's and column's amax
// (`by_line`), the tensor's (`tensor`), or nothing. Made before the call, into `a`; remembered
// for the written tensor after it.
struct Report {
  at::Tensor bits;
  bool lines = false;

  Report(const at::Tensor& like, bool by_line, bool tensor, int64_t rows, int64_t cols,
         cuda::SwigluArgs& a)
      : bits(by_line  ? new_line_amax(like, rows, cols)
             : tensor ? new_amax(like)
                      : at::Tensor()),
        lines(by_line) {
    if (!bits.defined()) return;
    (lines ? a.line_amax : a.amax) = reinterpret_cast<uint32_t*>(bits.data_ptr<int32_t>());
  }
  void remember(const at::Tensor& written, int64_t cols) const {
    if (lines) {
      remember_line_amax(written, bits, cols);
    } else if (bits.defined()) {
      remember_amax(written, bits);
    }
  }
};
#endif

class SwigluFunction : public torch::autograd::Function<SwigluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up, bool report_amax,
                            bool int8_saved, bool lines_forward, bool lines_backward,
                            const InputQuantization& consumer,
                            const InputQuantization& grad_consumer) {
    const profiling::Range range("swiglu");
    ctx->saved_data["amax"] = report_amax;
    ctx->saved_data["lines"] = lines_backward;
    ctx->saved_data["type"] = static_cast<int64_t>(gate_up.scalar_type());
#ifdef LPBENCH_CUDA_GLUE
    if (grad_consumer.history != nullptr) ctx->saved_data["dy"] = to_saved(grad_consumer);
    if (on_kernel(gate_up)) {
      const at::Tensor gu = gate_up.contiguous();
      std::vector<int64_t> sizes = gu.sizes().vec();
      sizes.back() /= 2;
      // The consumer's quantization written in place of the output, where the kernel takes it
      // (a history's first turn does not). A sampled step's diagnostics read the output itself.
      if (consumer.history != nullptr && producer_quantization() && !int8_saved &&
          !operand_diagnostics()) {
        if (auto quantized = quantize_swiglu_with_transpose(gu, consumer)) {
          ctx->save_for_backward({gu, at::Tensor()});
          at::Tensor out = quantized_stand_in(sizes, gu.options());
          remember_quantization(out, consumer, std::move(quantized->first),
                                std::move(quantized->second));
          return out;
        }
      }
      at::Tensor out = at::empty(sizes, gu.options());
      cuda::SwigluArgs a = args_for(gu);
      a.out = out.data_ptr();
      // Under saved=int8 the kernel writes gate_up's INT8 copy as it reads gate_up.
      const bool keeps = int8_saved && kernel_keeps_int8(a.inner);
      const SavedActivation saved = keeps ? int8_room(gu) : save_activation(gu, int8_saved);
      if (keeps) a.keep = blocks_of(saved);
      ctx->save_for_backward({saved.values, saved.scales});
      const Report report(gu, lines_forward && !keeps, report_amax, a.rows, a.inner, a);
      cuda::swiglu_forward(a, stream_of(gu));
      report.remember(out, a.inner);
      return out;
    }
#endif
    const SavedActivation saved = save_activation(gate_up, int8_saved);
    ctx->save_for_backward({saved.values, saved.scales});
    return reference::swiglu_forward(gate_up);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const profiling::Range range("swiglu backward");
    const variable_list kept = ctx->get_saved_variables();
    const auto type = static_cast<at::ScalarType>(ctx->saved_data["type"].toInt());
#ifdef LPBENCH_CUDA_GLUE
    // The INT8 copy the forward's kernel wrote is read by the backward's kernel as it is.
    const bool reads_blocks = kept[1].defined() && kept[0].is_cuda() && type == at::kBFloat16 &&
                              kernel_keeps_int8(kept[0].size(-1) / 2);
    const at::Tensor gate_up =
        reads_blocks ? kept[0] : restore_activation({kept[0], kept[1]}, type);
    if (reads_blocks || on_kernel(gate_up)) {
      const at::Tensor gu = gate_up.contiguous();
      const at::Tensor d = grads[0].contiguous();
      const auto dy = ctx->saved_data.find("dy");
      if (dy != ctx->saved_data.end() && !reads_blocks && !ctx->saved_data["lines"].toBool()) {
        at::Tensor stand_in = quantized_gradient(gu, d, from_saved(dy->second.toIntVector()));
        if (stand_in.defined()) {
          return {stand_in,     at::Tensor(), at::Tensor(), at::Tensor(),
                  at::Tensor(), at::Tensor(), at::Tensor()};
        }
      }
      at::Tensor d_gate_up = at::empty_like(gu, gu.options().dtype(type));
      cuda::SwigluArgs a = args_for(gu);
      if (reads_blocks) {
        a.gate_up = nullptr;
        a.kept = kept_blocks_of({gu, kept[1].contiguous()});
      }
      a.d_out = d.data_ptr();
      a.d_gate_up = d_gate_up.data_ptr();
      const Report report(gu, ctx->saved_data["lines"].toBool() && !reads_blocks,
                          ctx->saved_data["amax"].toBool(), a.rows, 2 * a.inner, a);
      cuda::swiglu_backward(a, stream_of(gu));
      report.remember(d_gate_up, 2 * a.inner);
      return {d_gate_up,    at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor(), at::Tensor(), at::Tensor()};
    }
#else
    const at::Tensor gate_up = restore_activation({kept[0], kept[1]}, type);
#endif
    return {reference::swiglu_backward(grads[0], gate_up),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor swiglu(const at::Tensor& gate_up, bool report_amax, bool int8_saved, LineAmax lines,
                  const InputQuantization& consumer, const InputQuantization& grad_consumer) {
  return SwigluFunction::apply(gate_up, report_amax, int8_saved, lines.forward, lines.backward,
                               consumer, grad_consumer);
}

}  // namespace lpbench::kernels
