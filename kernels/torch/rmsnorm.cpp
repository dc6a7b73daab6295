#include "kernels/torch/rmsnorm.h"

#include <torch/autograd.h>

#include "kernels/profiling/range.h"
#include "kernels/reference/rmsnorm.h"
#include "kernels/torch/saved_activation.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/operand_diagnostics.h"
#endif

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#ifdef LPBENCH_CUDA_GLUE
// The kernels take BF16 rows of a multiple of 8 elements, up to their longest, and an FP32
// weight; anything else runs on the reference.
bool on_kernel(const at::Tensor& x, const at::Tensor& weight) {
  return x.is_cuda() && x.scalar_type() == at::kBFloat16 && x.size(-1) % 8 == 0 &&
         x.size(-1) <= cuda::rmsnorm_max_cols && weight.scalar_type() == at::kFloat;
}

cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
#endif

// The norm's outputs and what its backward keeps of h (the input x, or the residual sum): h
// itself, or under saved=int8 its INT8 copy, which the kernel writes as it holds h's rows.
struct NormForward {
  reference::RmsNormOut out;
  SavedActivation kept;
};

NormForward norm_forward(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                         double eps, bool report_amax, bool int8_saved,
                         const InputQuantization& consumer) {
  const profiling::Range range("norm");
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(x, weight)) {
    const int64_t cols = x.size(-1);
    const at::Tensor xc = x.contiguous();
    const at::Tensor rc = residual.defined() ? residual.contiguous() : at::Tensor();
    const at::Tensor w = weight.contiguous();
    reference::RmsNormOut out;
    out.h = rc.defined() ? at::empty_like(xc) : xc;
    // The consumer's quantization written in place of y, where the kernel takes it (not a
    // history's first turn; not under saved=int8, as for SwiGLU, nor on a diagnosed step, whose
    // statistics read y itself): the norm's kernel then writes h and rstd only, and under a
    // current scale finds y's amax for it.
    const bool quantizes = consumer.any() && producer_quantization() && !int8_saved &&
                           !operand_diagnostics() &&
                           rmsnorm_quantization_applies(out.h, w, consumer);
    out.y = quantizes ? quantized_stand_in(xc.sizes(), xc.options()) : at::empty_like(xc);
    out.rstd = at::empty({xc.numel() / cols}, xc.options().dtype(at::kFloat));
    cuda::RmsNormArgs a;
    a.x = xc.data_ptr();
    a.residual = rc.defined() ? rc.data_ptr() : nullptr;
    a.weight = w.data_ptr<float>();
    a.rows = xc.numel() / cols;
    a.cols = cols;
    a.eps = static_cast<float>(eps);
    a.h = rc.defined() ? out.h.data_ptr() : nullptr;
    a.y = quantizes ? nullptr : out.y.data_ptr();
    a.rstd = out.rstd.data_ptr<float>();
    // y's amax: for y's consumer where y is written, or for the quantization written in its
    // place under a current scale.
    const bool reports = report_amax && !quantizes;
    const bool finds = reports || (quantizes && consumer.own_amax);
    const at::Tensor amax = finds ? new_amax(xc) : at::Tensor();
    if (finds) a.y_amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
    const bool keeps = int8_saved && kernel_keeps_int8(cols);
    SavedActivation kept = keeps ? int8_room(xc) : SavedActivation{};
    if (keeps) a.keep = blocks_of(kept);
    cuda::rmsnorm_forward(a, stream_of(xc));
    if (reports) remember_amax(out.y, amax);
    if (quantizes) {
      auto quantized = quantize_rmsnorm_with_transpose(out.h, out.rstd, w, consumer, amax);
      TORCH_CHECK(quantized.has_value(),
                  "rms_norm: the consumer's quantization did not apply after it was checked");
      remember_quantization(out.y, consumer, std::move(quantized->first),
                            std::move(quantized->second));
    }
    if (!keeps) kept = save_activation(out.h, int8_saved);
    return {out, kept};
  }
#endif
  (void)consumer;  // off the GPU the consumer quantizes y itself
  reference::RmsNormOut out = reference::rmsnorm_forward(x, residual, weight, eps);
  return {out, save_activation(out.h, int8_saved)};
}

reference::RmsNormGrads norm_backward(const at::Tensor& dy, const SavedActivation& kept,
                                      at::ScalarType type, const at::Tensor& weight,
                                      const at::Tensor& rstd, const at::Tensor& dh_in,
                                      bool report_amax) {
  const profiling::Range range("norm backward");
#ifdef LPBENCH_CUDA_GLUE
  // The INT8 copy is read by the kernel as it is, where the kernel could have written it.
  const bool reads_blocks = kept.scales.defined() && kept.values.is_cuda() &&
                            type == at::kBFloat16 && kernel_keeps_int8(kept.values.size(-1)) &&
                            kept.values.size(-1) <= cuda::rmsnorm_max_cols &&
                            weight.scalar_type() == at::kFloat;
  const at::Tensor h = reads_blocks ? kept.values : restore_activation(kept, type);
  if (reads_blocks || on_kernel(h, weight)) {
    const int64_t cols = h.size(-1);
    const int64_t rows = h.numel() / cols;
    const at::Tensor dyc = dy.contiguous();
    const at::Tensor hc = h.contiguous();
    const at::Tensor dinc = dh_in.defined() ? dh_in.contiguous() : at::Tensor();
    const at::Tensor w = weight.contiguous();
    reference::RmsNormGrads grads{at::empty_like(hc, hc.options().dtype(type)),
                                  at::empty({cols}, w.options())};
    const at::Tensor workspace =
        at::empty({static_cast<int64_t>(cuda::rmsnorm_backward_workspace_bytes(rows, cols))},
                  hc.options().dtype(at::kByte));
    cuda::RmsNormBackwardArgs a;
    a.dy = dyc.data_ptr();
    if (reads_blocks) {
      a.h_kept = kept_blocks_of({hc, kept.scales.contiguous()});
    } else {
      a.h = hc.data_ptr();
    }
    a.weight = w.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>();
    a.dh_in = dinc.defined() ? dinc.data_ptr() : nullptr;
    a.rows = rows;
    a.cols = cols;
    a.dh = grads.dh.data_ptr();
    a.dweight = grads.dweight.data_ptr<float>();
    a.workspace = workspace.data_ptr();
    const at::Tensor amax = report_amax ? new_amax(hc) : at::Tensor();
    if (report_amax) a.dh_amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
    cuda::rmsnorm_backward(a, stream_of(hc));
    if (report_amax) remember_amax(grads.dh, amax);
    return grads;
  }
#else
  const at::Tensor h = restore_activation(kept, type);
#endif
  return reference::rmsnorm_backward(dy, h, weight, rstd, dh_in);
}

// What both norms keep: the normalized input (x, or the residual sum h) as norm_forward kept it,
// the weight and the inverse RMS per row. The backward recomputes the normalized values from the
// input and the forward's inverse RMS.
void save(AutogradContext* ctx, const NormForward& f, const at::Tensor& input,
          const at::Tensor& weight, bool report_amax) {
  ctx->save_for_backward({f.kept.values, f.kept.scales, weight, f.out.rstd});
  ctx->saved_data["amax"] = report_amax;
  ctx->saved_data["type"] = static_cast<int64_t>(input.scalar_type());
}

reference::RmsNormGrads backward_of(AutogradContext* ctx, const at::Tensor& dy,
                                    const at::Tensor& dh_in) {
  const variable_list saved = ctx->get_saved_variables();
  return norm_backward(dy, {saved[0], saved[1]},
                       static_cast<at::ScalarType>(ctx->saved_data["type"].toInt()), saved[2],
                       saved[3], dh_in, ctx->saved_data["amax"].toBool());
}

class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            double eps, bool report_amax, bool int8_saved,
                            const InputQuantization& consumer) {
    const NormForward f =
        norm_forward(x, at::Tensor(), weight, eps, report_amax, int8_saved, consumer);
    save(ctx, f, x, weight, report_amax);
    return f.out.y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    reference::RmsNormGrads g = backward_of(ctx, grads[0], {});
    return {g.dh, g.dweight, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// x returned as it came (autograd makes it a view of x whose gradient comes here), so that the
// gradient reaching x along the residual path arrives with the norm's own.
class RmsNormResidualFunction : public torch::autograd::Function<RmsNormResidualFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               double eps, bool report_amax, bool int8_saved,
                               const InputQuantization& consumer) {
    const NormForward f =
        norm_forward(x, at::Tensor(), weight, eps, report_amax, int8_saved, consumer);
    save(ctx, f, x, weight, report_amax);
    return {x, f.out.y};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // grads[0] reaches x along the residual path (undefined where nothing used it), grads[1] y.
    reference::RmsNormGrads g = backward_of(ctx, grads[1], grads[0]);
    return {g.dh, g.dweight, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class AddRmsNormFunction : public torch::autograd::Function<AddRmsNormFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x,
                               const at::Tensor& residual, const at::Tensor& weight, double eps,
                               bool report_amax, bool int8_saved,
                               const InputQuantization& consumer) {
    const NormForward f = norm_forward(x, residual, weight, eps, report_amax, int8_saved, consumer);
    save(ctx, f, x, weight, report_amax);
    return {f.out.h, f.out.y};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // grads[0] reaches h along the residual path (undefined where nothing used h), grads[1] y.
    reference::RmsNormGrads g = backward_of(ctx, grads[1], grads[0]);
    return {g.dh, g.dh, g.dweight, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, bool report_amax,
                    bool int8_saved, const InputQuantization& consumer) {
  return RmsNormFunction::apply(x, weight, eps, report_amax, int8_saved, consumer);
}

std::pair<at::Tensor, at::Tensor> rms_norm_residual(const at::Tensor& x, const at::Tensor& weight,
                                                    double eps, bool report_amax, bool int8_saved,
                                                    const InputQuantization& consumer) {
  const variable_list out =
      RmsNormResidualFunction::apply(x, weight, eps, report_amax, int8_saved, consumer);
  return {out[0], out[1]};
}

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& residual,
                                               const at::Tensor& weight, double eps,
                                               bool report_amax, bool int8_saved,
                                               const InputQuantization& consumer) {
  const variable_list out =
      AddRmsNormFunction::apply(x, residual, weight, eps, report_amax, int8_saved, consumer);
  return {out[0], out[1]};
}

}  // namespace lpbench::kernels
