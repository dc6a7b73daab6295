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

at::Tensor qk_norm_rope_into(const at::Tensor& x, const at::Tensor& weight, double eps,
                             const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& out) {
  TORCH_CHECK(x.dim() == 4 && out.sizes() == x.sizes() && weight.numel() == x.size(3),
              "qk_norm_rope: x ", x.sizes(), ", out ", out.sizes(), " and weight ", weight.sizes(),
              " do not match");
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(x, weight, {&x, &out})) {
    const at::Tensor w = weight.contiguous();
    const at::Tensor c = cos.contiguous(), s = sin.contiguous();
    at::Tensor rstd = at::empty({x.size(0) * x.size(1) * x.size(2)}, x.options().dtype(at::kFloat));
    cuda::QkNormRopeArgs a;
    a.x = x.data_ptr();
    a.x_strides = strides_of(x);
    a.y = out.data_ptr();
    a.y_strides = strides_of(out);
    a.weight = w.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>();
    set_heads(a, x, c, s);
    a.eps = static_cast<float>(eps);
    cuda::qk_norm_rope_forward(a, stream_of(x));
    return rstd;
  }
#endif
  const reference::QkNormRopeOut r = reference::qk_norm_rope_forward(x, weight, eps, cos, sin);
  out.copy_(r.y);
  return r.rstd;
}

at::Tensor qk_norm_rope_backward_into(const at::Tensor& dy, const at::Tensor& x,
                                      const at::Tensor& weight, const at::Tensor& rstd,
                                      const at::Tensor& cos, const at::Tensor& sin,
                                      const at::Tensor& dx, const at::Tensor& amax) {
  TORCH_CHECK(x.dim() == 4 && dy.sizes() == x.sizes() && dx.sizes() == x.sizes(),
              "qk_norm_rope_backward: dy ", dy.sizes(), ", x ", x.sizes(), " and dx ", dx.sizes(),
              " do not match");
#ifdef LPBENCH_CUDA_GLUE
  if (on_kernel(x, weight, {&dy, &x, &dx})) {
    const at::Tensor w = weight.contiguous();
    const at::Tensor c = cos.contiguous(), s = sin.contiguous();
    const int64_t rows = x.size(0) * x.size(1) * x.size(2);
    at::Tensor dweight = at::empty({x.size(3)}, weight.options());
    const at::Tensor workspace = at::empty(
        {static_cast<int64_t>(cuda::qk_norm_rope_backward_workspace_bytes(rows, x.size(3)))},
        x.options().dtype(at::kByte));
    cuda::QkNormRopeBackwardArgs a;
    a.dy = dy.data_ptr();
    a.dy_strides = strides_of(dy);
    a.x = x.data_ptr();
    a.x_strides = strides_of(x);
    a.dx = dx.data_ptr();
    a.dx_strides = strides_of(dx);
    a.weight = w.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>();
    a.dweight = dweight.data_ptr<float>();
    a.workspace = workspace.data_ptr();
    if (amax.defined()) a.dx_amax = reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>());
    set_heads(a, x, c, s);
    cuda::qk_norm_rope_backward(a, stream_of(x));
    return dweight;
  }
#endif
  const reference::QkNormRopeGrads g =
      reference::qk_norm_rope_backward(dy, x, weight, rstd, cos, sin);
  dx.copy_(g.dx);
  if (amax.defined()) fold_amax(amax, g.dx);
  return g.dweight;
}

}  // namespace lpbench::kernels
