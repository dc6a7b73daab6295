#include "kernels/torch/attention.h"

#include <ATen/ops/_fused_sdp_choice.h>
#include <torch/autograd.h>

#include <optional>

#include "kernels/profiling/range.h"
#include "kernels/reference/rope.h"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/qk_norm_rope.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/saved_activation.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/rope.cuh"
#include "kernels/torch/operand_diagnostics.h"
#endif

namespace lpbench::kernels {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

#ifdef LPBENCH_CUDA_GLUE
// The kernel's arguments for out = RoPE(in) (or, with `rotate` false, a copy) where the kernel
// takes these tensors; nothing otherwise.
std::optional<cuda::RopeArgs> kernel_args(const at::Tensor& in, const at::Tensor& out,
                                          const at::Tensor& cos, const at::Tensor& sin,
                                          bool inverse, bool rotate, const at::Tensor& amax) {
  if (!in.is_cuda() || in.scalar_type() != at::kBFloat16 || in.size(3) % 16 != 0 ||
      in.stride(3) != 1 || out.stride(3) != 1) {
    return std::nullopt;
  }
  cuda::RopeArgs a;
  a.in = in.data_ptr();
  a.out = out.data_ptr();
  a.batch = in.size(0);
  a.seq = in.size(1);
  a.heads = in.size(2);
  a.head_dim = in.size(3);
  a.in_batch_stride = in.stride(0);
  a.in_token_stride = in.stride(1);
  a.in_head_stride = in.stride(2);
  a.out_batch_stride = out.stride(0);
  a.out_token_stride = out.stride(1);
  a.out_head_stride = out.stride(2);
  a.cos = cos.data_ptr<float>();
  a.sin = sin.data_ptr<float>();
  a.inverse = inverse;
  a.rotate = rotate;
  if (amax.defined()) a.amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
  return a;
}

cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
#endif

// in and out [B, T, heads, D] (any strides, possibly the same tensor): out = RoPE(in), or with
// `rotate` false a copy; `amax` (optional, a device int32): max |out| folded in.
void rotate(const at::Tensor& in, const at::Tensor& out, const at::Tensor& cos,
            const at::Tensor& sin, bool inverse, bool rotate = true, const at::Tensor& amax = {}) {
#ifdef LPBENCH_CUDA_GLUE
  if (const auto a = kernel_args(in, out, cos, sin, inverse, rotate, amax)) {
    cuda::rope(*a, stream_of(in));
    return;
  }
#endif
  out.copy_(rotate ? reference::rope(in, cos, sin, inverse) : in);
  if (amax.defined()) fold_amax(amax, out);
}

// RoPE's backward into the gradient of the fused QKV product: attention's dQ and dK ([B, T,
// heads, D], any strides) rotated back into d.q and d.k, dV copied into d.v; in one launch where
// the kernel takes all three. `line_bits` (optional, [rows + cols] of the product's gradient,
// d.q at its column 0): every row's and column's amax reported instead of `amax`; returns
// whether they were (the kernel ran).
bool rotate_back(const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                 const at::Tensor& out_q, const at::Tensor& out_k, const at::Tensor& out_v,
                 const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& amax,
                 const at::Tensor& line_bits) {
#ifdef LPBENCH_CUDA_GLUE
  auto q = kernel_args(dq, out_q, cos, sin, /*inverse=*/true, /*rotate=*/true, amax);
  auto k = kernel_args(dk, out_k, cos, sin, /*inverse=*/true, /*rotate=*/true, amax);
  auto v = kernel_args(dv, out_v, cos, sin, /*inverse=*/false, /*rotate=*/false, amax);
  if (q && k && v) {
    cuda::RopeArgs parts[] = {*q, *k, *v};
    if (line_bits.defined()) {
      const at::Tensor* outs[] = {&out_q, &out_k, &out_v};
      for (int p = 0; p < 3; ++p) {
        parts[p].line_amax = reinterpret_cast<uint32_t*>(line_bits.data_ptr<int32_t>());
        parts[p].line_col = outs[p]->storage_offset() - out_q.storage_offset();
      }
    }
    cuda::rope_parts(parts, 3, stream_of(dq));
    return line_bits.defined();
  }
#endif
  rotate(dq, out_q, cos, sin, /*inverse=*/true, true, amax);
  rotate(dk, out_k, cos, sin, /*inverse=*/true, true, amax);
  rotate(dv, out_v, cos, sin, false, /*rotate=*/false, amax);
  return false;
}

// [B, T, (H + 2·KV)·D] → the q, k and v heads as [B, T, heads, D] views.
struct Heads {
  at::Tensor q, k, v, qk;
};
Heads split(const at::Tensor& qkv, const AttentionShape& s) {
  const int64_t b = qkv.size(0);
  const int64_t t = qkv.size(1);
  const int64_t d = s.head_dim;
  auto part = [&](int64_t first, int64_t heads) {
    return qkv.narrow(-1, first * d, heads * d).view({b, t, heads, d});
  };
  return {part(0, s.heads), part(s.heads, s.kv_heads), part(s.heads + s.kv_heads, s.kv_heads),
          part(0, s.heads + s.kv_heads)};
}

// Leaves of the autograd graph that SDPA's backward is asked for, sharing the heads' storage,
// as SDPA reads them: [B, heads, T, D].
struct Leaves {
  at::Tensor q, k, v;
};
Leaves leaves(const Heads& h) {
  auto leaf = [](const at::Tensor& x) { return x.transpose(1, 2).detach().requires_grad_(); };
  return {leaf(h.q), leaf(h.k), leaf(h.v)};
}

at::Tensor sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool gqa) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true, /*scale=*/std::nullopt,
                                          /*enable_gqa=*/gqa);
}

#ifdef LPBENCH_CUDA_GLUE
// The QKV product's dY quantized as its backward quantizes it (the forward's grad_consumer) under
// its history, in RoPE's backward's place, from attention's dQ, dK and dV ([B, heads, T, D], as
// SDPA's backward gives them). Returns the stand-in for the gradient (its values never written),
// or undefined where nothing was launched: no consumer, a history's first turn, the kernel does
// not take these shapes, lines asked for, a sampled step's diagnostics (which read the gradient
// itself).
at::Tensor quantized_gradient(AutogradContext* ctx, const variable_list& d_parts,
                              const at::Tensor& cos, const at::Tensor& sin,
                              const std::vector<int64_t>& sizes) {
  const auto dy = ctx->saved_data.find("dy");
  if (dy == ctx->saved_data.end() || ctx->saved_data["lines"].toBool() ||
      !producer_quantization() || operand_diagnostics()) {
    return {};
  }
  const InputQuantization input = from_saved(dy->second.toIntVector());
  const at::Tensor dq = d_parts[0].transpose(1, 2);
  const at::Tensor dk = d_parts[1].transpose(1, 2);
  const at::Tensor dv = d_parts[2].transpose(1, 2);
  const auto q = kernel_args(dq, dq, cos, sin, /*inverse=*/true, /*rotate=*/true, {});
  const auto k = kernel_args(dk, dk, cos, sin, /*inverse=*/true, /*rotate=*/true, {});
  const auto v = kernel_args(dv, dv, cos, sin, /*inverse=*/false, /*rotate=*/false, {});
  if (!q || !k || !v) return {};
  const cuda::RopeArgs parts[] = {*q, *k, *v};
  const int64_t cols = sizes.back();
  const int64_t rows = c10::multiply_integers(sizes) / cols;
  const profiling::Range range("rope backward quantized");
  auto quantized = quantize_rope_backward_with_transpose(parts, dq, rows, cols, input);
  if (!quantized) return {};
  at::Tensor stand_in = quantized_stand_in(sizes, dq.options());
  remember_quantization(stand_in, input, std::move(quantized->first), std::move(quantized->second));
  return stand_in;
}
#endif

class CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv_in, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, const at::Tensor& cos,
                            const at::Tensor& sin, bool report_amax, bool int8_saved, bool qk_norm,
                            const at::Tensor& q_norm, const at::Tensor& k_norm, double eps,
                            bool report_lines, const InputQuantization& grad_consumer) {
    const AttentionShape shape{heads, kv_heads, head_dim};
    const at::Tensor qkv = qkv_in.contiguous();
    const Heads h = split(qkv, shape);
    TORCH_CHECK(!qk_norm || !int8_saved,
                "causal_attention: per-head norms under saved=int8 are "
                "qk_norm_attention_int8_saved's");
    ctx->saved_data["shape"] = std::vector<int64_t>{heads, kv_heads, head_dim};
    ctx->saved_data["qkv_sizes"] = qkv.sizes();
    ctx->saved_data["amax"] = report_amax;
    ctx->saved_data["lines"] = report_lines;
    ctx->saved_data["int8"] = int8_saved;
    ctx->saved_data["qk_norm"] = qk_norm;
    if (grad_consumer.history != nullptr) ctx->saved_data["dy"] = to_saved(grad_consumer);
    if (qk_norm) {
      // Qwen3: q and k normalized and rotated out of qkv into a buffer of their own, which
      // attention reads; qkv stays as the projection wrote it, the norms' input for backward.
      const at::Tensor qk =
          at::empty({qkv.size(0), qkv.size(1), heads + kv_heads, head_dim}, qkv.options());
      const at::Tensor q = qk.narrow(2, 0, heads), k = qk.narrow(2, heads, kv_heads);
      std::array<at::Tensor, 2> rstd;
      {
        const profiling::Range range("qk norm rope");
        rstd = qk_norm_rope_into({h.q, q_norm, q}, {h.k, k_norm, k}, eps, cos, sin);
      }
      ctx->save_for_backward({cos, sin, qkv, q_norm, k_norm, rstd[0], rstd[1]});
      return attend_saving(ctx, Heads{q, k, h.v, qk}, shape, qkv);
    }
    {
      const profiling::Range range("rope");
      rotate(h.qk, h.qk, cos, sin, /*inverse=*/false);
    }
    if (int8_saved) {
      // Only the rotated qkv, as INT8 blocks (one head of 128 a block): the backward runs the
      // attention again on the restored q, k and v and differentiates that, so nothing of
      // SDPA's own state (q, k, v, o, the log-sum-exp) lives between forward and backward.
      const SavedActivation kept = save_activation(qkv, true);
      ctx->save_for_backward({cos, sin, kept.values, kept.scales});
      ctx->saved_data["type"] = static_cast<int64_t>(qkv.scalar_type());
      const profiling::Range range("sdpa");
      const at::Tensor o =
          sdpa(h.q.transpose(1, 2), h.k.transpose(1, 2), h.v.transpose(1, 2), kv_heads != heads);
      return o.transpose(1, 2).reshape({qkv.size(0), qkv.size(1), heads * head_dim});
    }
    ctx->save_for_backward({cos, sin});
    return attend_saving(ctx, h, shape, qkv);
  }

  // Attention through torch's own autograd (its backend, its saved state), recorded on leaves
  // that share the heads' storage; the backward asks that graph for dQ, dK and dV.
  static at::Tensor attend_saving(AutogradContext* ctx, const Heads& h, const AttentionShape& shape,
                                  const at::Tensor& qkv) {
    const Leaves l = leaves(h);
    at::Tensor o;
    {
      const profiling::Range range("sdpa");
      const at::AutoGradMode grad(true);
      o = sdpa(l.q, l.k, l.v, shape.kv_heads != shape.heads);
    }
    ctx->saved_data["o"] = o;
    ctx->saved_data["q"] = l.q;
    ctx->saved_data["k"] = l.k;
    ctx->saved_data["v"] = l.v;
    return o.detach().transpose(1, 2).reshape(
        {qkv.size(0), qkv.size(1), shape.heads * shape.head_dim});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> s = ctx->saved_data["shape"].toIntVector();
    const AttentionShape shape{s[0], s[1], s[2]};
    const variable_list tables = ctx->get_saved_variables();
    const at::Tensor& grad = grads[0];
    const at::Tensor grad_o =
        grad.view({grad.size(0), grad.size(1), shape.heads, shape.head_dim}).transpose(1, 2);
    at::Tensor o, q, k, v;
    if (ctx->saved_data["int8"].toBool()) {
      const at::Tensor qkv = restore_activation(
          {tables[2], tables[3]}, static_cast<at::ScalarType>(ctx->saved_data["type"].toInt()));
      const Leaves l = leaves(split(qkv, shape));
      q = l.q;
      k = l.k;
      v = l.v;
      const profiling::Range range("sdpa again");
      const at::AutoGradMode grad_mode(true);
      o = sdpa(q, k, v, shape.kv_heads != shape.heads);
    } else {
      o = ctx->saved_data["o"].toTensor();
      q = ctx->saved_data["q"].toTensor();
      k = ctx->saved_data["k"].toTensor();
      v = ctx->saved_data["v"].toTensor();
      // Saved data, unlike saved variables, is not released when the node has run: it would
      // keep this layer's qkv and attention output (and the inner graph's saved tensors) until
      // the whole graph is destroyed after the step, 4 GiB on llama2-7b's 32 layers at 4096
      // tokens (docs/perf-log.md §18). Nothing differentiates this node twice.
      for (const char* key : {"o", "q", "k", "v"})
        ctx->saved_data.erase(key);
    }
    variable_list dqkv_parts;
    {
      const profiling::Range range("sdpa backward");
      dqkv_parts = torch::autograd::grad({o}, {q, k, v}, {grad_o});
    }
    const bool qk_norm = ctx->saved_data["qk_norm"].toBool();
    const std::vector<int64_t> qkv_sizes = ctx->saved_data["qkv_sizes"].toIntVector();
#ifdef LPBENCH_CUDA_GLUE
    if (!qk_norm) {
      const at::Tensor stand_in =
          quantized_gradient(ctx, dqkv_parts, tables[0], tables[1], qkv_sizes);
      if (stand_in.defined()) {
        return {stand_in,     at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
      }
    }
#endif
    const at::Tensor dqkv = at::empty(qkv_sizes, grad.options());
    const Heads d = split(dqkv, shape);
    // Lines where RoPE's kernel writes all of dqkv (the per-head norms' backward reports none),
    // else the tensor's amax where asked for.
    const bool lines = ctx->saved_data["lines"].toBool() && dqkv.is_cuda() && !qk_norm;
    const int64_t width = dqkv.size(-1);
    const at::Tensor line_bits =
        lines ? new_line_amax(dqkv, dqkv.numel() / width, width) : at::Tensor();
    const bool report_amax = ctx->saved_data["amax"].toBool() && dqkv.is_cuda() && !lines;
    const at::Tensor amax = report_amax ? new_amax(dqkv) : at::Tensor();
    const at::Tensor &cos = tables[0], &sin = tables[1];
    at::Tensor d_q_norm, d_k_norm;
    if (qk_norm) {
      const profiling::Range range("qk norm rope backward");
      const Heads x = split(tables[2], shape);
      const auto dweights = qk_norm_rope_backward_into(
          {dqkv_parts[0].transpose(1, 2), x.q, tables[3], tables[5], d.q},
          {dqkv_parts[1].transpose(1, 2), x.k, tables[4], tables[6], d.k}, cos, sin, amax,
          {dqkv_parts[2].transpose(1, 2), d.v});
      d_q_norm = dweights[0];
      d_k_norm = dweights[1];
    } else {
      const profiling::Range range("rope backward");
      const bool reported =
          rotate_back(dqkv_parts[0].transpose(1, 2), dqkv_parts[1].transpose(1, 2),
                      dqkv_parts[2].transpose(1, 2), d.q, d.k, d.v, cos, sin, amax, line_bits);
      if (reported) remember_line_amax(dqkv, line_bits, width);
    }
    if (report_amax) remember_amax(dqkv, amax);
    return {dqkv,         at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), d_q_norm,
            d_k_norm,     at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Qwen3's attention under saved=int8: per-head RMSNorms of q and k, RoPE, SDPA. Only qkv as
// it leaves the projection (before the norms) is kept, as INT8 blocks; the backward restores it,
// runs norms, RoPE and SDPA again under autograd and differentiates that, so none of their state
// (normalized and rotated q and k, v, o, the log-sum-exp, the norms' inputs) lives between
// forward and backward.
class QkNormAttentionFunction : public torch::autograd::Function<QkNormAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv_in,
                            const at::Tensor& q_norm, const at::Tensor& k_norm, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, double eps, const at::Tensor& cos,
                            const at::Tensor& sin) {
    const AttentionShape shape{heads, kv_heads, head_dim};
    const at::Tensor qkv = qkv_in.contiguous();
    const SavedActivation kept = save_activation(qkv, true);
    ctx->save_for_backward({kept.values, kept.scales, q_norm, k_norm, cos, sin});
    ctx->saved_data["shape"] = std::vector<int64_t>{heads, kv_heads, head_dim};
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["type"] = static_cast<int64_t>(qkv.scalar_type());
    return attend(qkv, q_norm, k_norm, shape, eps, cos, sin, "sdpa");
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const std::vector<int64_t> s = ctx->saved_data["shape"].toIntVector();
    const AttentionShape shape{s[0], s[1], s[2]};
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor qkv =
        restore_activation({saved[0], saved[1]},
                           static_cast<at::ScalarType>(ctx->saved_data["type"].toInt()))
            .detach()
            .requires_grad_();
    const at::Tensor q_norm = saved[2].detach().requires_grad_();
    const at::Tensor k_norm = saved[3].detach().requires_grad_();
    variable_list d;
    {
      const at::AutoGradMode grad_mode(true);
      const at::Tensor o = attend(qkv, q_norm, k_norm, shape, ctx->saved_data["eps"].toDouble(),
                                  saved[4], saved[5], "sdpa again");
      const profiling::Range range("sdpa backward");
      d = torch::autograd::grad({o}, {qkv, q_norm, k_norm}, {grads[0]});
    }
    return {d[0],         d[1],         d[2],         at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }

 private:
  // The forward, as the composition of the differentiable operators (rms_norm, rope, SDPA):
  // run without autograd in forward, under it in backward.
  static at::Tensor attend(const at::Tensor& qkv, const at::Tensor& q_norm,
                           const at::Tensor& k_norm, const AttentionShape& shape, double eps,
                           const at::Tensor& cos, const at::Tensor& sin, const char* region) {
    const Heads h = split(qkv, shape);
    at::Tensor q = rms_norm(h.q.contiguous(), q_norm, eps);
    at::Tensor k = rms_norm(h.k.contiguous(), k_norm, eps);
    q = rope(q, cos, sin);
    k = rope(k, cos, sin);
    const profiling::Range range(region);
    const at::Tensor o = sdpa(q.transpose(1, 2), k.transpose(1, 2), h.v.transpose(1, 2),
                              shape.kv_heads != shape.heads);
    return o.transpose(1, 2).reshape({qkv.size(0), qkv.size(1), shape.heads * shape.head_dim});
  }
};

class RopeFunction : public torch::autograd::Function<RopeFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin) {
    const profiling::Range range("rope");
    ctx->save_for_backward({cos, sin});
    at::Tensor out = at::empty(x.sizes(), x.options());
    rotate(x, out, cos, sin, /*inverse=*/false);
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const profiling::Range range("rope backward");
    const variable_list tables = ctx->get_saved_variables();
    at::Tensor dx = at::empty(grads[0].sizes(), grads[0].options());
    rotate(grads[0], dx, tables[0], tables[1], /*inverse=*/true);
    return {dx, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor causal_attention(const at::Tensor& qkv, const AttentionShape& shape,
                            const at::Tensor& cos, const at::Tensor& sin, bool report_amax,
                            bool int8_saved, const QkNorms& qk_norms, bool report_lines,
                            const InputQuantization& grad_consumer) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) == (shape.heads + 2 * shape.kv_heads) * shape.head_dim,
              "causal_attention: qkv ", qkv.sizes(), " does not hold ", shape.heads, "+2×",
              shape.kv_heads, " heads of ", shape.head_dim);
  TORCH_CHECK(qk_norms.q.defined() == qk_norms.k.defined(),
              "causal_attention: per-head norms of both q and k, or of neither");
  // Autograd takes no undefined tensor as an input: without the norms, empty stand-ins.
  const bool qk_norm = qk_norms.q.defined();
  const at::Tensor none = qk_norm ? at::Tensor() : at::empty({0}, cos.options());
  return CausalAttentionFunction::apply(qkv, shape.heads, shape.kv_heads, shape.head_dim, cos, sin,
                                        report_amax, int8_saved, qk_norm,
                                        qk_norm ? qk_norms.q : none, qk_norm ? qk_norms.k : none,
                                        qk_norms.eps, report_lines, grad_consumer);
}

at::Tensor qk_norm_attention_int8_saved(const at::Tensor& qkv, const AttentionShape& shape,
                                        const at::Tensor& q_norm, const at::Tensor& k_norm,
                                        double eps, const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) == (shape.heads + 2 * shape.kv_heads) * shape.head_dim,
              "qk_norm_attention_int8_saved: qkv ", qkv.sizes(), " does not hold ", shape.heads,
              "+2×", shape.kv_heads, " heads of ", shape.head_dim);
  return QkNormAttentionFunction::apply(qkv, q_norm, k_norm, shape.heads, shape.kv_heads,
                                        shape.head_dim, eps, cos, sin);
}

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return RopeFunction::apply(x, cos, sin);
}

std::string attention_backend(const AttentionShape& shape, int64_t tokens,
                              const at::TensorOptions& options) {
  const at::Tensor q = at::empty({1, shape.heads, tokens, shape.head_dim}, options);
  const at::Tensor kv = at::empty({1, shape.kv_heads, tokens, shape.head_dim}, options);
  const int64_t choice =
      at::_fused_sdp_choice(q, kv, kv, {}, 0.0, true, std::nullopt, shape.kv_heads != shape.heads);
  switch (choice) {
    case 0:
      return "math";
    case 1:
      return "flash";
    case 2:
      return "efficient";
    case 3:
      return "cudnn";
    default:
      return "backend " + std::to_string(choice);
  }
}

}  // namespace lpbench::kernels
