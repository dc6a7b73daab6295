#include "kernels/torch/qk_norm_rope.h"

#include "kernels/reference/qk_norm_rope.h"
#include "kernels/torch/amax_registry.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda/qk_norm_rope.cuh"
#endif

namespace lpbench::kernels {

namespace {

#ifdef LPBENCH_CUDA_GLUE
bool on_kernel(const at::Tensor& x, const at::Tensor& weight,
               std::initializer_list<const at::Tensor*> heads) {
  if (!x.is_cuda() || x.scalar_type() != at::kBFloat16 || weight.scalar_type() != at::kFloat ||
      !cuda::qk_norm_rope_applies(x.size(3))) {
    return false;
  }
  for (const at::Tensor* t : heads) {
    if (t->scalar_type() != at::kBFloat16 || t->stride(3) != 1 || t->stride(0) % 8 != 0 ||
        t->stride(1) % 8 != 0 || t->stride(2) % 8 != 0 ||
        reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0) {
      return false;
    }
  }
  return true;
}

cuda::QkNormRopeStrides strides_of(const at::Tensor& t) {
  return {t.stride(0), t.stride(1), t.stride(2)};
}

// The heads' sizes and RoPE's tables (contiguous FP32), as both launchers take them.
template <typename Args>
void set_heads(Args& a, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  a.batch = x.size(0);
  a.seq = x.size(1);
  a.heads = x.size(2);
  a.head_dim = x.size(3);
  a.cos = cos.data_ptr<float>();
  a.sin = sin.data_ptr<float>();
}

cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
#endif

}  // namespace

namespace {

void check_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& out) {
  TORCH_CHECK(x.dim() == 4 && out.sizes() == x.sizes() && weight.numel() == x.size(3),
              "qk_norm_rope: x ", x.sizes(), ", out ", out.sizes(), " and weight ", weight.sizes(),
              " do not match");
}

// The copied heads where no kernel takes them along: a copy, then its amax.
void copy_heads(const QkNormRopeCopy& v, const at::Tensor& amax) {
  v.dst.copy_(v.src);
  if (amax.defined()) fold_amax(amax, v.dst);
}

void check_backward(const QkNormRopeGradHeads& g) {
  TORCH_CHECK(g.x.dim() == 4 && g.dy.sizes() == g.x.sizes() && g.dx.sizes() == g.x.sizes(),
              "qk_norm_rope_backward: dy ", g.dy.sizes(), ", x ", g.x.sizes(), " and dx ",
              g.dx.sizes(), " do not match");
}

#ifdef LPBENCH_CUDA_GLUE
// One head set's launch arguments, with the tensors they point into (the weight and tables made
// contiguous, what the kernel writes) held until the launch.
struct ForwardLaunch {
  cuda::QkNormRopeArgs args;
  at::Tensor weight, cos, sin, rstd;
};

ForwardLaunch forward_launch(const QkNormRopeHeads& h, double eps, const at::Tensor& cos,
                             const at::Tensor& sin) {
  ForwardLaunch l;
  l.weight = h.weight.contiguous();
  l.cos = cos.contiguous();
  l.sin = sin.contiguous();
  const at::Tensor& x = h.x;
  l.rstd = at::empty({x.size(0) * x.size(1) * x.size(2)}, x.options().dtype(at::kFloat));
  cuda::QkNormRopeArgs& a = l.args;
  a.x = x.data_ptr();
  a.x_strides = strides_of(x);
  a.y = h.out.data_ptr();
  a.y_strides = strides_of(h.out);
  a.weight = l.weight.data_ptr<float>();
  a.rstd = l.rstd.data_ptr<float>();
  set_heads(a, x, l.cos, l.sin);
  a.eps = static_cast<float>(eps);
  return l;
}

struct BackwardLaunch {
  cuda::QkNormRopeBackwardArgs args;
  at::Tensor weight, cos, sin, dweight, workspace;
};

// The workspace sized for `rows` head vectors (this set's, or both sets' for one launch; none
// for 0).
BackwardLaunch backward_launch(const QkNormRopeGradHeads& g, const at::Tensor& cos,
                               const at::Tensor& sin, const at::Tensor& amax, int64_t rows) {
  BackwardLaunch l;
  l.weight = g.weight.contiguous();
  l.cos = cos.contiguous();
  l.sin = sin.contiguous();
  const at::Tensor& x = g.x;
  l.dweight = at::empty({x.size(3)}, g.weight.options());
  if (rows > 0) {
    l.workspace = at::empty(
        {static_cast<int64_t>(cuda::qk_norm_rope_backward_workspace_bytes(rows, x.size(3)))},
        x.options().dtype(at::kByte));
  }
  cuda::QkNormRopeBackwardArgs& a = l.args;
  a.dy = g.dy.data_ptr();
  a.dy_strides = strides_of(g.dy);
  a.x = x.data_ptr();
  a.x_strides = strides_of(x);
  a.dx = g.dx.data_ptr();
  a.dx_strides = strides_of(g.dx);
  a.weight = l.weight.data_ptr<float>();
  a.rstd = g.rstd.data_ptr<float>();
  a.dweight = l.dweight.data_ptr<float>();
  a.workspace = rows > 0 ? l.workspace.data_ptr() : nullptr;
  if (amax.defined()) a.dx_amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
  set_heads(a, x, l.cos, l.sin);
  return l;
}

int64_t head_rows(const at::Tensor& x) {
  return x.size(0) * x.size(1) * x.size(2);
}
#endif

}  // namespace

at::Tensor qk_norm_rope_into(const at::Tensor& x, const at::Tensor& weight, double eps,
                             const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& out) {
  check_forward(x, weight, out);
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(x, weight, {&x, &out})) {
    const ForwardLaunch l = forward_launch({x, weight, out}, eps, cos, sin);
    cuda::qk_norm_rope_forward(l.args, stream_of(x));
    return l.rstd;
  }
#endif
  const reference::QkNormRopeOut r = reference::qk_norm_rope_forward(x, weight, eps, cos, sin);
  out.copy_(r.y);
  return r.rstd;
}

std::array<at::Tensor, 2> qk_norm_rope_into(const QkNormRopeHeads& q, const QkNormRopeHeads& k,
                                            double eps, const at::Tensor& cos,
                                            const at::Tensor& sin) {
  check_forward(q.x, q.weight, q.out);
  check_forward(k.x, k.weight, k.out);
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(q.x, q.weight, {&q.x, &q.out}) && on_kernel(k.x, k.weight, {&k.x, &k.out}) &&
      q.x.size(3) == k.x.size(3)) {
    const ForwardLaunch lq = forward_launch(q, eps, cos, sin);
    const ForwardLaunch lk = forward_launch(k, eps, cos, sin);
    cuda::qk_norm_rope_forward(lq.args, lk.args, stream_of(q.x));
    return {lq.rstd, lk.rstd};
  }
#endif
  return {qk_norm_rope_into(q.x, q.weight, eps, cos, sin, q.out),
          qk_norm_rope_into(k.x, k.weight, eps, cos, sin, k.out)};
}

at::Tensor qk_norm_rope_backward_into(const at::Tensor& dy, const at::Tensor& x,
                                      const at::Tensor& weight, const at::Tensor& rstd,
                                      const at::Tensor& cos, const at::Tensor& sin,
                                      const at::Tensor& dx, const at::Tensor& amax) {
  const QkNormRopeGradHeads g{dy, x, weight, rstd, dx};
  check_backward(g);
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(x, weight, {&dy, &x, &dx})) {
    const BackwardLaunch l = backward_launch(g, cos, sin, amax, head_rows(x));
    cuda::qk_norm_rope_backward(l.args, stream_of(x));
    return l.dweight;
  }
#endif
  const reference::QkNormRopeGrads r =
      reference::qk_norm_rope_backward(dy, x, weight, rstd, cos, sin);
  dx.copy_(r.dx);
  if (amax.defined()) fold_amax(amax, r.dx);
  return r.dweight;
}

std::array<at::Tensor, 2> qk_norm_rope_backward_into(const QkNormRopeGradHeads& q,
                                                     const QkNormRopeGradHeads& k,
                                                     const at::Tensor& cos, const at::Tensor& sin,
                                                     const at::Tensor& amax,
                                                     const QkNormRopeCopy& v) {
  check_backward(q);
  check_backward(k);
  const bool copy = v.src.defined();
  TORCH_CHECK(!copy || (v.src.dim() == 4 && v.dst.defined() && v.dst.sizes() == v.src.sizes()),
              "qk_norm_rope_backward: the copied heads ", v.src.sizes(), " and their slots ",
              v.dst.defined() ? v.dst.sizes() : at::IntArrayRef{}, " do not match");
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(q.x, q.weight, {&q.dy, &q.x, &q.dx}) &&
      on_kernel(k.x, k.weight, {&k.dy, &k.x, &k.dx}) && q.x.size(3) == k.x.size(3)) {
    // q's workspace holds both sets' partial rows.
    const BackwardLaunch lq = backward_launch(q, cos, sin, amax, head_rows(q.x) + head_rows(k.x));
    BackwardLaunch lk = backward_launch(k, cos, sin, amax, 0);
    lk.args.workspace = lq.args.workspace;
    if (copy && on_kernel(v.src, q.weight, {&v.src, &v.dst})) {
      cuda::QkNormRopeCopyArgs c;
      c.src = v.src.data_ptr();
      c.src_strides = strides_of(v.src);
      c.dst = v.dst.data_ptr();
      c.dst_strides = strides_of(v.dst);
      c.batch = v.src.size(0);
      c.seq = v.src.size(1);
      c.heads = v.src.size(2);
      c.head_dim = v.src.size(3);
      if (amax.defined()) c.amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
      cuda::qk_norm_rope_backward(lq.args, lk.args, c, stream_of(q.x));
    } else {
      cuda::qk_norm_rope_backward(lq.args, lk.args, stream_of(q.x));
      if (copy) copy_heads(v, amax);
    }
    return {lq.dweight, lk.dweight};
  }
#endif
  std::array<at::Tensor, 2> dweights = {
      qk_norm_rope_backward_into(q.dy, q.x, q.weight, q.rstd, cos, sin, q.dx, amax),
      qk_norm_rope_backward_into(k.dy, k.x, k.weight, k.rstd, cos, sin, k.dx, amax)};
  if (copy) copy_heads(v, amax);
  return dweights;
}

}  // namespace lpbench::kernels
