// lpbench's element-wise CUDA kernels against their references (kernels/reference), on the GPU:
// RoPE bit for bit, RMSNorm and SwiGLU within the rounding their FP32 sums allow, at the sizes of
// the seed models and off them (a single row, rows shorter than a warp's vectors, the kernels'
// longest rows and rows past them, which take the reference), strided and in place; then the
// fused decoder against the unfused one. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/_fused_adamw.h>
#include <c10/cuda/CUDAStream.h>

#include <array>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/quantize_hadamard.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/recipe.h"
#include "kernels/reference/cross_entropy.h"
#include "kernels/reference/hadamard.h"
#include "kernels/reference/rmsnorm.h"
#include "kernels/reference/rope.h"
#include "kernels/reference/swiglu.h"
#include "kernels/torch/adamw_step.h"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/attention.h"
#include "kernels/torch/embedding.h"
#include "kernels/torch/qk_norm_rope.h"
#include "kernels/torch/quantize.h"
#include "kernels/torch/quantize_hadamard.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/rounding_seed.h"
#include "kernels/torch/saved_activation.h"
#include "kernels/torch/swiglu.h"
#include "tests/support/layer_steps.h"
#include "tests/support/rope_tables.h"
#include "tests/support/tensor_compare.h"
#include "tests/support/unfused_loss.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_zoo.h"

namespace lpbench::kernels {
namespace {

using lpbench::test_support::leaf;
using lpbench::test_support::relative_error;

const torch::Device kGpu(torch::kCUDA, 0);
const auto kBf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(kGpu);

class FusedKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the kernels are not run";
  }
};

TEST_F(FusedKernels, RmsNormMatchesTheReferenceForwardAndBackward) {
  struct Case {
    int64_t rows, cols;
  };
  // The backward's rows across 2 warps (512 columns), 4 with idle threads (768) and 16 (4096 up).
  for (const Case c : {Case{1, 8}, Case{3, 24}, Case{37, 128}, Case{7, 512}, Case{6, 768},
                       Case{4096, 4096}, Case{5, 5120}, Case{2, 8192}, Case{2, 8200}}) {
    for (const bool residual : {false, true}) {
      torch::manual_seed(c.rows * 31 + c.cols);
      const at::Tensor x0 = torch::randn({c.rows, c.cols}, kBf16);
      const at::Tensor r0 = residual ? torch::randn({c.rows, c.cols}, kBf16) : at::Tensor();
      const at::Tensor w0 = 1.0 + 0.1 * torch::randn({c.cols}, kGpu);
      const at::Tensor dy = torch::randn({c.rows, c.cols}, kBf16);
      const at::Tensor dh = residual ? torch::randn({c.rows, c.cols}, kBf16) : at::Tensor();
      const std::string what = std::to_string(c.rows) + "x" + std::to_string(c.cols) +
                               (residual ? " with a residual" : "");

      at::Tensor x = leaf(x0), w = leaf(w0), r = residual ? leaf(r0) : at::Tensor();
      at::Tensor h, y;
      if (residual) {
        std::tie(h, y) = add_rms_norm(x, r, w, 1e-5);
        torch::autograd::backward({y, h}, {dy, dh});
      } else {
        y = rms_norm(x, w, 1e-5);
        y.backward(dy);
      }
      const reference::RmsNormOut ref = reference::rmsnorm_forward(x0, r0, w0, 1e-5);
      const reference::RmsNormGrads ref_grads =
          reference::rmsnorm_backward(dy, ref.h, w0, ref.rstd, dh);
      if (residual) {
        EXPECT_TRUE(h.equal(ref.h)) << what;  // one BF16 add
      }
      // Sums in another order: y within a BF16 rounding, the FP32 weight gradient closer.
      EXPECT_LT(relative_error(y, ref.y), 2e-3) << what;
      EXPECT_LT(relative_error(x.grad(), ref_grads.dh), 4e-3) << what;
      EXPECT_LT(relative_error(w.grad(), ref_grads.dweight), 1e-4) << what;
      if (residual) {
        EXPECT_TRUE(r.grad().equal(x.grad())) << what;
      }
    }
  }
}

at::Tensor rope_table(int64_t seq, int64_t head_dim, bool cosine) {
  const auto [cos, sin] = test_support::rope_tables(seq, head_dim);
  return (cosine ? cos : sin).to(kGpu);
}

// RoPE's backward as one launch of three parts, as a layer runs it: attention's gradients dq, dk
// and dv ([B, T, H, D] views of SDPA's [B, H, T, D]) rotated back (dq, dk) or copied (dv) into
// dqkv's heads in that order, each part folding max |written| into `amax` (or none).
std::array<cuda::RopeArgs, 3> rope_backward_parts(const at::Tensor& dq, const at::Tensor& dk,
                                                  const at::Tensor& dv, const at::Tensor& dqkv,
                                                  const at::Tensor& cos, const at::Tensor& sin,
                                                  uint32_t* amax) {
  auto part = [&](const at::Tensor& in, int64_t first, int64_t n, bool rotate) {
    const at::Tensor out = dqkv.narrow(2, first, n);
    cuda::RopeArgs a;
    a.in = in.data_ptr();
    a.out = out.data_ptr();
    a.batch = in.size(0);
    a.seq = in.size(1);
    a.heads = n;
    a.head_dim = in.size(3);
    a.in_batch_stride = in.stride(0);
    a.in_token_stride = in.stride(1);
    a.in_head_stride = in.stride(2);
    a.out_batch_stride = out.stride(0);
    a.out_token_stride = out.stride(1);
    a.out_head_stride = out.stride(2);
    a.cos = cos.data_ptr<float>();
    a.sin = sin.data_ptr<float>();
    a.inverse = true;
    a.rotate = rotate;
    a.amax = amax;
    return a;
  };
  const int64_t heads = dq.size(2), kv = dk.size(2);
  return {part(dq, 0, heads, true), part(dk, heads, kv, true), part(dv, heads + kv, kv, false)};
}

// Each row's amax, then each column's, of t seen as rows of its last dimension: FP32 bits, as the
// producers report them.
at::Tensor line_amax_of(const at::Tensor& t) {
  const at::Tensor a = t.reshape({-1, t.size(-1)}).abs().to(at::kFloat);
  return at::cat({std::get<0>(a.max(1)), std::get<0>(a.max(0))}).view(at::kInt);
}

TEST_F(FusedKernels, RopeIsBitExactStridedAndInPlaceForwardAndBackward) {
  const int64_t seq = 300;
  for (const int64_t head_dim : {16, 64, 128}) {
    const at::Tensor cos = rope_table(seq, head_dim, true);
    const at::Tensor sin = rope_table(seq, head_dim, false);
    torch::manual_seed(head_dim);
    // q and k heads as the fused QKV product holds them: strided views into a wider buffer.
    const at::Tensor qkv = torch::randn({2, seq, (8 + 2 * 2) * head_dim}, kBf16);
    const at::Tensor qk = qkv.narrow(-1, 0, 10 * head_dim).view({2, seq, 10, head_dim});
    const at::Tensor out = rope(qk, cos, sin);
    EXPECT_TRUE(out.equal(reference::rope(qk, cos, sin))) << head_dim;
    // The backward rotates back, from another layout (attention's [B, H, T, D]).
    const at::Tensor g = torch::randn({2, 10, seq, head_dim}, kBf16).transpose(1, 2);
    at::Tensor x = leaf(qk);
    rope(x, cos, sin).backward(g);
    EXPECT_TRUE(x.grad().equal(reference::rope(g, cos, sin, /*inverse=*/true))) << head_dim;
  }
}

// RoPE's backward in one launch (dQ and dK rotated back, dV copied, into the QKV product's
// gradient) gives the bits of the reference part by part, and the amax of all it wrote, or each
// row's and column's; with grouped heads, at two head sizes and a sequence that ends inside a
// block (and, for 64, a row of 48 groups that leaves part of a warp idle).
TEST_F(FusedKernels, RopeBackwardInOneLaunchIsThePartsBitForBit) {
  const int64_t seq = 300, heads = 8, kv = 2;
  for (const int64_t d : {64, 128}) {
    const at::Tensor cos = rope_table(seq, d, true);
    const at::Tensor sin = rope_table(seq, d, false);
    torch::manual_seed(d + 1);
    // Attention's gradients as SDPA leaves them, [B, H, T, D], seen as [B, T, H, D].
    const at::Tensor dq = torch::randn({2, heads, seq, d}, kBf16).transpose(1, 2);
    const at::Tensor dk = torch::randn({2, kv, seq, d}, kBf16).transpose(1, 2);
    const at::Tensor dv = torch::randn({2, kv, seq, d}, kBf16).transpose(1, 2);
    const at::Tensor dqkv = torch::full({2, seq, heads + 2 * kv, d}, 7.0, kBf16);
    const at::Tensor amax = torch::zeros({1}, kBf16.dtype(at::kInt));
    const auto parts = rope_backward_parts(dq, dk, dv, dqkv, cos, sin,
                                           reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>()));
    cuda::rope_parts(parts.data(), 3, c10::cuda::getCurrentCUDAStream().stream());
    EXPECT_TRUE(dqkv.narrow(2, 0, heads).equal(reference::rope(dq, cos, sin, true))) << d;
    EXPECT_TRUE(dqkv.narrow(2, heads, kv).equal(reference::rope(dk, cos, sin, true))) << d;
    EXPECT_TRUE(dqkv.narrow(2, heads + kv, kv).equal(dv)) << d;
    const float written = dqkv.abs().max().to(at::kFloat).item<float>();
    float reported = 0;
    const int32_t bits = amax.item<int32_t>();
    std::memcpy(&reported, &bits, sizeof reported);
    EXPECT_EQ(reported, written) << d;
    // The same launch reporting every row's and column's amax of dqkv [2·seq, width] instead:
    // the same bits written, and each line's max |x| (in one row, GQA's k and v beside q).
    const int64_t width = (heads + 2 * kv) * d;
    const at::Tensor lines = torch::zeros({2 * seq + width}, kBf16.dtype(at::kInt));
    const at::Tensor by_lines = torch::full_like(dqkv, 7.0);
    cuda::RopeArgs line_parts[3];
    for (int p = 0; p < 3; ++p) {
      line_parts[p] = parts[p];
      line_parts[p].amax = nullptr;
      line_parts[p].line_amax = reinterpret_cast<uint32_t*>(lines.data_ptr<int32_t>());
      line_parts[p].line_col = (p == 0 ? 0 : p == 1 ? heads : heads + kv) * d;
      line_parts[p].out = static_cast<at::BFloat16*>(by_lines.data_ptr()) + line_parts[p].line_col;
    }
    cuda::rope_parts(line_parts, 3, c10::cuda::getCurrentCUDAStream().stream());
    EXPECT_TRUE(by_lines.equal(dqkv)) << d;
    EXPECT_TRUE(lines.equal(line_amax_of(by_lines.view({2 * seq, width})))) << d;
  }
}

// SwiGLU (both ways) and RoPE's backward in one launch run one wave of threads that each walk
// many items, loading the next item's words before they store the current one (for RoPE,
// crossing from one part into the next): the bits of the reference (of SwiGLU's forward under
// saved=int8, whose kernel takes a vector a thread in turn; of its backward within expf's last
// bit), with the tensor's amax asked for or not, and the amax of what they wrote.
TEST_F(FusedKernels, WalkingProducersWriteTheReferenceBitsAndTheirAmax) {
  const auto bits_of = [](const at::Tensor& t) {
    return c10::bit_cast<int32_t>(t.abs().max().to(at::kFloat).item<float>());
  };
  {
    torch::manual_seed(23);
    const at::Tensor gu0 = 3.0 * torch::randn({2053, 2 * 2176}, kBf16);
    const at::Tensor d = torch::randn({2053, 2176}, kBf16);
    const at::Tensor gu = leaf(gu0);
    const at::Tensor out = swiglu(gu, /*report_amax=*/true);
    const at::Tensor dgu = torch::autograd::grad({out}, {gu}, {d})[0];
    const at::Tensor plain_gu = leaf(gu0);
    const at::Tensor plain = swiglu(plain_gu);
    const at::Tensor plain_dgu = torch::autograd::grad({plain}, {plain_gu}, {d})[0];
    EXPECT_TRUE(out.equal(plain));
    EXPECT_TRUE(out.equal(swiglu(gu0, /*report_amax=*/false, /*int8_saved=*/true)));
    EXPECT_TRUE(dgu.equal(plain_dgu));
    EXPECT_LT(relative_error(dgu, reference::swiglu_backward(d, gu0)), 1e-3);
    for (const at::Tensor& t : {out.detach(), dgu}) {
      const std::optional<at::Tensor> reported = recall_amax(t);
      ASSERT_TRUE(reported.has_value());
      EXPECT_EQ(reported->item<int32_t>(), bits_of(t));
    }
  }
  const int64_t seq = 2050, heads = 32, kv = 8, d = 128;
  const at::Tensor cos = rope_table(seq, d, true);
  const at::Tensor sin = rope_table(seq, d, false);
  torch::manual_seed(29);
  const at::Tensor dq = torch::randn({2, heads, seq, d}, kBf16).transpose(1, 2);
  const at::Tensor dk = torch::randn({2, kv, seq, d}, kBf16).transpose(1, 2);
  const at::Tensor dv = 2.0 * torch::randn({2, kv, seq, d}, kBf16).transpose(1, 2);
  const at::Tensor amax = torch::zeros({1}, kBf16.dtype(at::kInt));
  const auto launch = [&](const at::Tensor& dqkv, uint32_t* to) {
    cuda::rope_parts(rope_backward_parts(dq, dk, dv, dqkv, cos, sin, to).data(), 3,
                     c10::cuda::getCurrentCUDAStream().stream());
  };
  const at::Tensor walked = torch::full({2, seq, heads + 2 * kv, d}, 7.0, kBf16);
  const at::Tensor plain = torch::full_like(walked, 7.0);
  launch(walked, reinterpret_cast<uint32_t*>(amax.data_ptr<int32_t>()));
  launch(plain, nullptr);
  EXPECT_TRUE(walked.equal(plain));
  EXPECT_TRUE(walked.narrow(2, 0, heads).equal(reference::rope(dq, cos, sin, true)));
  EXPECT_TRUE(walked.narrow(2, heads, kv).equal(reference::rope(dk, cos, sin, true)));
  EXPECT_TRUE(walked.narrow(2, heads + kv, kv).equal(dv));
  EXPECT_EQ(amax.item<int32_t>(), bits_of(walked));
}

// Qwen3's per-head norm and RoPE in one kernel each way against the norm kernel then the RoPE
// kernel (and back): the same roundings in the same order, so the same bits, from the strided
// heads of a QKV product and back from attention's [B, H, T, D] gradient; and the amax of what
// the backward wrote. Five heads a token: the kernels' groups of consecutive rows then straddle
// tokens, and the last block is part full.
TEST_F(FusedKernels, QkNormRopeIsTheNormThenRopeKernelsBitForBit) {
  for (const auto& [head_dim, heads, seq] : {std::array<int64_t, 3>{16, 8, 300},
                                             {64, 8, 300},
                                             {128, 8, 300},
                                             {256, 8, 300},
                                             {128, 5, 301},
                                             {64, 5, 7}}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", " + std::to_string(heads) +
                 " heads, " + std::to_string(seq) + " tokens");
    const at::Tensor cos = rope_table(seq, head_dim, true);
    const at::Tensor sin = rope_table(seq, head_dim, false);
    torch::manual_seed(head_dim + heads);
    const at::Tensor qkv = 3.0 * torch::randn({2, seq, (heads + 2 * 2) * head_dim}, kBf16);
    const at::Tensor x = qkv.narrow(-1, 0, heads * head_dim).view({2, seq, heads, head_dim});
    const at::Tensor w = 1.0 + 0.2 * torch::randn({head_dim}, kGpu);
    const double eps = 1e-6;

    const at::Tensor y = at::empty(x.sizes(), x.options());
    const at::Tensor rstd = qk_norm_rope_into(x, w, eps, cos, sin, y);
    at::Tensor xl = leaf(x.contiguous()), wl = leaf(w);
    const at::Tensor composed = rope(rms_norm(xl, wl, eps), cos, sin);
    EXPECT_TRUE(y.equal(composed));

    const at::Tensor dy = torch::randn({2, heads, seq, head_dim}, kBf16).transpose(1, 2);
    composed.backward(dy);
    const at::Tensor dx = at::empty(x.sizes(), x.options());
    const at::Tensor amax = new_amax(dx);
    const at::Tensor dw = qk_norm_rope_backward_into(dy, x, w, rstd, cos, sin, dx, amax);
    EXPECT_TRUE(dx.equal(xl.grad()));
    // The weight's gradient: the same terms, their partial sums added in another grouping.
    EXPECT_LT(relative_error(dw, wl.grad()), 1e-5);
    EXPECT_EQ(amax.item<int32_t>(),
              c10::bit_cast<int32_t>(dx.abs().max().to(at::kFloat).item<float>()));
  }
}

// The q and the k heads in one launch each way compute what a launch each computes: y, rstd and
// dx bit for bit, the amax of both, the weights' gradients within their partial sums' grouping.
// The backward also copies dV into the v slots in its sums' launch: the same bits as a copy, its
// amax folded in (dV is drawn larger, so the amax is dV's). 2 × 3 tokens of 4 + 2 heads are
// fewer rows than a block takes: the launcher then runs the two sets one after the other, the
// copy with the second.
TEST_F(FusedKernels, QkNormRopeTakesBothHeadSetsInOneLaunch) {
  for (const auto& [head_dim, heads, kv_heads, seq] :
       {std::array<int64_t, 4>{128, 32, 8, 300}, {64, 5, 2, 301}, {128, 4, 2, 3}}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", " + std::to_string(heads) + " + " +
                 std::to_string(kv_heads) + " heads, " + std::to_string(seq) + " tokens");
    const at::Tensor cos = rope_table(seq, head_dim, true);
    const at::Tensor sin = rope_table(seq, head_dim, false);
    torch::manual_seed(head_dim + heads);
    const int64_t all = heads + 2 * kv_heads;
    const at::Tensor qkv = 3.0 * torch::randn({2, seq, all, head_dim}, kBf16);
    const at::Tensor xq = qkv.narrow(2, 0, heads), xk = qkv.narrow(2, heads, kv_heads);
    const at::Tensor wq = 1.0 + 0.2 * torch::randn({head_dim}, kGpu);
    const at::Tensor wk = 1.0 + 0.2 * torch::randn({head_dim}, kGpu);
    const double eps = 1e-6;

    const at::Tensor yq = at::empty(xq.sizes(), xq.options()),
                     yk = at::empty_like(yq.narrow(2, 0, kv_heads));
    const at::Tensor rq = qk_norm_rope_into(xq, wq, eps, cos, sin, yq);
    const at::Tensor rk = qk_norm_rope_into(xk, wk, eps, cos, sin, yk);
    const at::Tensor pq = at::empty_like(yq), pk = at::empty_like(yk);
    const auto rstd = qk_norm_rope_into({xq, wq, pq}, {xk, wk, pk}, eps, cos, sin);
    EXPECT_TRUE(pq.equal(yq) && pk.equal(yk));
    EXPECT_TRUE(rstd[0].equal(rq) && rstd[1].equal(rk));

    const at::Tensor dyq = torch::randn({2, heads, seq, head_dim}, kBf16).transpose(1, 2);
    const at::Tensor dyk = torch::randn({2, kv_heads, seq, head_dim}, kBf16).transpose(1, 2);
    const at::Tensor dx = at::empty_like(qkv), pdx = at::empty_like(qkv);
    const at::Tensor amax = new_amax(dx), pamax = new_amax(pdx);
    const at::Tensor dwq =
        qk_norm_rope_backward_into(dyq, xq, wq, rq, cos, sin, dx.narrow(2, 0, heads), amax);
    const at::Tensor dwk =
        qk_norm_rope_backward_into(dyk, xk, wk, rk, cos, sin, dx.narrow(2, heads, kv_heads), amax);
    const int64_t qk = heads + kv_heads;
    const at::Tensor dyv = 4.0 * torch::randn({2, kv_heads, seq, head_dim}, kBf16).transpose(1, 2);
    dx.narrow(2, qk, kv_heads).copy_(dyv);
    const auto dw = qk_norm_rope_backward_into({dyq, xq, wq, rq, pdx.narrow(2, 0, heads)},
                                               {dyk, xk, wk, rk, pdx.narrow(2, heads, kv_heads)},
                                               cos, sin, pamax, {dyv, pdx.narrow(2, qk, kv_heads)});
    EXPECT_TRUE(pdx.equal(dx));
    EXPECT_EQ(pamax.item<int32_t>(),
              c10::bit_cast<int32_t>(dx.abs().max().to(at::kFloat).item<float>()));
    EXPECT_GT(pamax.item<int32_t>(), amax.item<int32_t>());  // dV's, beyond dq's and dk's
    EXPECT_LT(relative_error(dw[0], dwq), 1e-5);
    EXPECT_LT(relative_error(dw[1], dwk), 1e-5);
  }
}

TEST_F(FusedKernels, SwigluMatchesTheReferenceForwardAndBackward) {
  for (const int64_t inner : {8, 96, 11008, 14336}) {
    torch::manual_seed(inner);
    const at::Tensor gu0 = 3.0 * torch::randn({257, 2 * inner}, kBf16);
    const at::Tensor d = torch::randn({257, inner}, kBf16);
    at::Tensor gu = leaf(gu0);
    const at::Tensor out = swiglu(gu);
    out.backward(d);
    // expf against torch's exp on the same FP32 values: now and then a last-bit difference
    // that a BF16 rounding moves by one unit.
    EXPECT_LT(relative_error(out, reference::swiglu_forward(gu0)), 1e-3) << inner;
    EXPECT_LT(relative_error(gu.grad(), reference::swiglu_backward(d, gu0)), 1e-3) << inner;
  }
}

// The output layer's loss kernel against the reference's ATen ops on the same GPU: the 16-byte
// path (a vocabulary of 8s, more rows than the grid has blocks) and the element one (an odd
// vocabulary), a divisor that is a power of two (a multiply) and one that is not (a division);
// a few rows a block, or many; each row held whole in shared memory between the passes, in part
// (the rest read again), or not; one block a row, or a cluster of 2 sharing it (slices of unequal
// length, and slices with nothing in them, included); the held part loaded by the threads and, on
// Hopper, brought in by bulk copies (the next row's streaming in while a row is written), and by
// bulk copies with part of the unheld end kept in registers (one block of 512 a row: all of the
// unheld end, or the tail's reach and the rest read again).
TEST_F(FusedKernels, CrossEntropyMatchesTheReferenceInPlace) {
  struct Case {
    int64_t rows, vocab, divisor, held_bytes;
    int threads, cluster;
  };
  const bool hopper = at::cuda::getCurrentDeviceProperties()->major >= 9;
  int case_index = 0;
  // engine 0: the threads' loads; 1: bulk copies; 2: bulk copies and the register tail.
  for (const int engine : {0, 1, 2})
    for (Case c : {Case{300, 32000, 4096, -1, 0, 0},   Case{37, 1003, 37, -1, 0, 0},
                   Case{5, 151936, 5, -1, 0, 0},       Case{300, 32000, 4096, 0, 0, 0},
                   Case{37, 1003, 37, 512, 0, 0},      Case{6, 32000, 6, 8192, 0, 0},
                   Case{300, 32000, 4096, -1, 512, 0}, Case{5, 151936, 5, -1, 512, 0},
                   Case{37, 1003, 37, 1024, 512, 0},   Case{300, 128256, 4096, -1, 128, 0},
                   Case{37, 1003, 37, 256, 128, 0},    Case{300, 128256, 4096, -1, 0, 0},
                   Case{9, 151936, 9, -1, 512, 2},     Case{300, 32000, 4096, -1, 128, 2},
                   Case{300, 128256, 4096, 0, 0, 2},   Case{6, 32000, 6, 8192, 256, 2},
                   Case{37, 1000, 37, -1, 128, 2},     Case{7, 8, 7, -1, 256, 2},
                   Case{37, 1003, 37, -1, 0, 2},       Case{1500, 32000, 1500, -1, 0, 0},
                   Case{9, 151936, 9, 65536, 512, 0},  Case{300, 128256, 4096, 0, 512, 1}}) {
      if (engine >= 1 && !hopper) continue;
      if (engine == 2) {  // the tail's launch only: one block of 512 a row
        if (c.cluster == 2 || (c.threads != 0 && c.threads != 512)) continue;
        c.threads = 512;
      }
      // The bulk path's held part in the default two chunks, one, three or sixteen, in turn.
      const int chunks = engine >= 1 ? std::array<int, 4>{0, 1, 3, 16}[case_index++ % 4] : 0;
      torch::manual_seed(c.vocab);
      const at::Tensor logits = 4.0 * torch::randn({c.rows, c.vocab}, kBf16);
      at::Tensor targets = torch::randint(0, c.vocab, {c.rows}, kBf16.dtype(at::kLong));
      targets[0] = c.vocab - 1;
      targets[1] = 0;
      const reference::CrossEntropyRows want =
          reference::softmax_cross_entropy(logits, targets, c.divisor);

      at::Tensor grad = logits.clone();
      const at::Tensor loss = torch::empty({c.rows}, kBf16.dtype(at::kFloat));
      cuda::CrossEntropyArgs a;
      a.logits = grad.data_ptr();
      a.targets = targets.data_ptr<int64_t>();
      a.rows = c.rows;
      a.vocab = c.vocab;
      a.divisor = c.divisor;
      a.loss = loss.data_ptr<float>();
      a.held_bytes = c.held_bytes;
      a.block_threads = c.threads;
      a.cluster_blocks = c.cluster;
      a.copy_engine = std::min(engine, 1);
      a.copy_chunks = chunks;
      a.tail_in_registers = engine == 2 ? 1 : 0;
      cuda::softmax_cross_entropy(a, c10::cuda::getCurrentCUDAStream().stream());
      const char* const how = engine == 0   ? "the threads' loads"
                              : engine == 1 ? "bulk copies"
                                            : "bulk copies and the register tail";
      SCOPED_TRACE(testing::Message() << c.vocab << " words, " << c.held_bytes << " bytes held, "
                                      << c.threads << " threads, " << c.cluster << " a cluster, "
                                      << how << ", " << chunks << " chunks");

      const at::Tensor row_loss =
          -at::log_softmax(logits.to(at::kFloat), -1).gather(1, targets.unsqueeze(1)).squeeze(1);
      EXPECT_LT((loss - row_loss).abs().max().item<double>(), 1e-4) << c.vocab;
      EXPECT_LT(std::abs(loss.sum().item<double>() - want.loss_sum.item<double>()),
                1e-5 * want.loss_sum.item<double>())
          << c.vocab;
      // Sums in another order move an FP32 value by a few units in its last place, which a BF16
      // rounding turns into one unit now and then, and no more (one BF16 unit is at most 2^-7 of
      // the value).
      const at::Tensor g = grad.to(at::kDouble), w = want.grad.to(at::kDouble);
      const at::Tensor off = (g - w).abs() > (g.abs().maximum(w.abs()) / 128.0 + 1e-30);
      EXPECT_EQ(off.sum().item<int64_t>(), 0) << c.vocab;
      EXPECT_LT((g != w).to(at::kDouble).mean().item<double>(), 1e-3) << c.vocab;
    }
}

// The launch the kernel chooses on Hopper (228 KiB of shared memory an SM): the held part by bulk
// copies; the most blocks an SM whose shares (55 KiB at 128 threads, 112 at 256, 224 at 512) hold
// a whole row each, else one block of 512 a row with the register tail; by the threads' loads, two
// blocks of 256 a row as a cluster where no share holds a row; what the caller gives is kept, and a
// register tail asked of a launch that cannot have one is refused.
TEST_F(FusedKernels, CrossEntropyTakesTheMostBlocksThatHoldARow) {
  if (at::cuda::getCurrentDeviceProperties()->major != 9) GTEST_SKIP() << "not a Hopper GPU";
  const at::Tensor logits = torch::empty({1, 151936}, kBf16);
  const at::Tensor targets = torch::zeros({1}, kBf16.dtype(at::kLong));
  const at::Tensor loss = torch::empty({1}, kBf16.dtype(at::kFloat));
  const auto shape = [&](int64_t vocab, int threads, int cluster, int engine = -1, int tail = -1) {
    cuda::CrossEntropyArgs a;
    a.logits = logits.data_ptr();
    a.targets = targets.data_ptr<int64_t>();
    a.rows = 1;
    a.vocab = vocab;
    a.loss = loss.data_ptr<float>();
    a.block_threads = threads;
    a.cluster_blocks = cluster;
    a.copy_engine = engine;
    a.tail_in_registers = tail;
    const cuda::CrossEntropyShape s = cuda::softmax_cross_entropy_shape(a);
    return std::make_tuple(s.block_threads, s.cluster_blocks, s.copy_engine, s.tail_in_registers);
  };
  EXPECT_EQ(shape(16000, 0, 0), std::make_tuple(128, 1, 1, 0));   // 31 KiB a row
  EXPECT_EQ(shape(32000, 0, 0), std::make_tuple(256, 1, 1, 0));   // 62.5 KiB
  EXPECT_EQ(shape(100000, 0, 0), std::make_tuple(512, 1, 1, 0));  // 195 KiB
  EXPECT_EQ(shape(128256, 0, 0), std::make_tuple(512, 1, 1, 1));  // 250.5 KiB: 224 held
  EXPECT_EQ(shape(151936, 0, 0), std::make_tuple(512, 1, 1, 1));
  // By the threads' loads: a cluster of two where no share holds a row.
  EXPECT_EQ(shape(32000, 0, 0, 0), std::make_tuple(256, 1, 0, 0));
  EXPECT_EQ(shape(100000, 0, 0, 0), std::make_tuple(512, 1, 0, 0));
  EXPECT_EQ(shape(128256, 0, 0, 0), std::make_tuple(256, 2, 0, 0));
  EXPECT_EQ(shape(151936, 0, 0, 0), std::make_tuple(256, 2, 0, 0));
  // What the caller gives is kept.
  EXPECT_EQ(shape(151936, 256, 0), std::make_tuple(256, 1, 1, 0));
  EXPECT_EQ(shape(151936, 0, 2), std::make_tuple(256, 2, 1, 0));
  EXPECT_EQ(shape(151936, 128, 2), std::make_tuple(128, 2, 1, 0));
  EXPECT_EQ(shape(151936, 512, 1, 0), std::make_tuple(512, 1, 0, 0));
  EXPECT_EQ(shape(151936, 0, 0, -1, 0), std::make_tuple(512, 1, 1, 0));
  EXPECT_EQ(shape(32000, 512, 0, -1, 1), std::make_tuple(512, 1, 1, 1));
  // A register tail only on one block of 512 a row by bulk copies.
  EXPECT_THROW(shape(151936, 256, 0, -1, 1), std::invalid_argument);
  EXPECT_THROW(shape(151936, 0, 2, -1, 1), std::invalid_argument);
  EXPECT_THROW(shape(151936, 512, 1, 0, 1), std::invalid_argument);
  EXPECT_THROW(shape(32000, 0, 0, -1, 1), std::invalid_argument);  // 256 threads a row
  // The element path: one block a row, its threads' own loads.
  EXPECT_EQ(shape(1003, 0, 2), std::make_tuple(128, 1, 0, 0));
  EXPECT_EQ(shape(1003, 0, 0, 1), std::make_tuple(128, 1, 0, 0));
  EXPECT_EQ(shape(1003, 512, 0, 1, 1), std::make_tuple(512, 1, 0, 0));
}

TEST_F(FusedKernels, CrossEntropyGivesANanLossForATargetOutsideTheVocabulary) {
  const at::Tensor logits = torch::randn({3, 64}, kBf16);
  const at::Tensor targets = torch::tensor({5, 64, -1}, kBf16.dtype(at::kLong));
  at::Tensor grad = logits.clone();
  const at::Tensor loss = torch::empty({3}, kBf16.dtype(at::kFloat));
  cuda::CrossEntropyArgs a;
  a.logits = grad.data_ptr();
  a.targets = targets.data_ptr<int64_t>();
  a.rows = 3;
  a.vocab = 64;
  a.divisor = 3;
  a.loss = loss.data_ptr<float>();
  cuda::softmax_cross_entropy(a, c10::cuda::getCurrentCUDAStream().stream());
  const at::Tensor bad = loss.isnan();
  EXPECT_FALSE(bad[0].item<bool>());
  EXPECT_TRUE(bad[1].item<bool>());
  EXPECT_TRUE(bad[2].item<bool>());
  // The softmax without the −1: no element of the two rows below zero.
  EXPECT_GE(grad.narrow(0, 1, 2).min().item<double>(), 0.0);
  EXPECT_LT(grad[0].min().item<double>(), 0.0);
}

// A launch the kernel does not have is refused with one line, before anything is written.
TEST_F(FusedKernels, CrossEntropyRefusesALaunchItDoesNotHave) {
  const at::Tensor logits = torch::randn({2, 64}, kBf16);
  const at::Tensor targets = torch::zeros({2}, kBf16.dtype(at::kLong));
  const at::Tensor loss = torch::empty({2}, kBf16.dtype(at::kFloat));
  at::Tensor grad = logits.clone();
  const auto with = [&](const std::function<void(cuda::CrossEntropyArgs&)>& change) {
    cuda::CrossEntropyArgs a;
    a.logits = grad.data_ptr();
    a.targets = targets.data_ptr<int64_t>();
    a.rows = 2;
    a.vocab = 64;
    a.loss = loss.data_ptr<float>();
    change(a);
    return a;
  };
  const auto stream = c10::cuda::getCurrentCUDAStream().stream();
  for (const auto& change : std::vector<std::function<void(cuda::CrossEntropyArgs&)>>{
           [](cuda::CrossEntropyArgs& a) { a.block_threads = 64; },
           [](cuda::CrossEntropyArgs& a) { a.cluster_blocks = 4; },
           [](cuda::CrossEntropyArgs& a) { a.copy_engine = 2; },
           [](cuda::CrossEntropyArgs& a) { a.copy_engine = -2; },
           [](cuda::CrossEntropyArgs& a) { a.held_bytes = -2; },
           [](cuda::CrossEntropyArgs& a) { a.copy_chunks = 17; },
           [](cuda::CrossEntropyArgs& a) { a.copy_chunks = -1; },
           [](cuda::CrossEntropyArgs& a) { a.tail_in_registers = 2; },
           [](cuda::CrossEntropyArgs& a) { a.tail_in_registers = -2; },
           [](cuda::CrossEntropyArgs& a) {
             a.vocab = 32;  // the 16-byte path, four blocks of 128 a row
             a.tail_in_registers = 1;
           }})
    EXPECT_THROW(cuda::softmax_cross_entropy(with(change), stream), std::invalid_argument);
  EXPECT_TRUE(grad.equal(logits));
}

// The operator on the GPU (one product, the kernel) against the unfused product and libtorch's
// cross-entropy, the gradients included.
TEST_F(FusedKernels, LinearCrossEntropyMatchesTheUnfusedLossOnTheGpu) {
  torch::manual_seed(11);
  const at::Tensor h0 = torch::randn({96, 64}, kBf16);
  const at::Tensor master0 = 0.2 * torch::randn({1000, 64}, kBf16.dtype(at::kFloat));
  const at::Tensor targets = torch::randint(0, 1000, {96}, kBf16.dtype(at::kLong));
  for (const double scale : {1.0, 1.0 / 3.0}) {
    const auto r = test_support::loss_against_unfused(h0, master0, targets, 1024, scale);
    EXPECT_LT(std::abs(r.loss - r.unfused_loss), 1e-5 * r.unfused_loss);
    EXPECT_LT(r.dh_error, 2.0 / 256) << scale;
    EXPECT_EQ(r.dw_type, at::kFloat);
    EXPECT_LT(r.dw_error, 2.0 / 256) << scale;
  }
}

TEST_F(FusedKernels, CausalAttentionMatchesRopeThenSdpaOnTheGpu) {
  const AttentionShape shape{8, 2, 128};  // llama3's grouping, at a small width
  const int64_t seq = 512;
  const at::Tensor cos = rope_table(seq, 128, true);
  const at::Tensor sin = rope_table(seq, 128, false);
  torch::manual_seed(9);
  const at::Tensor qkv0 = torch::randn({2, seq, (8 + 2 * 2) * 128}, kBf16);
  const at::Tensor d = torch::randn({2, seq, 8 * 128}, kBf16);
  at::Tensor qkv = leaf(qkv0);
  causal_attention(qkv * 1, shape, cos, sin).backward(d);
  const at::Tensor o = causal_attention(qkv0.clone(), shape, cos, sin);

  at::Tensor qkvu = leaf(qkv0);
  auto heads = [&](int64_t first, int64_t n) {
    return qkvu.narrow(-1, first * 128, n * 128).view({2, seq, n, 128});
  };
  const at::Tensor ou = at::scaled_dot_product_attention(
                            reference::rope(heads(0, 8), cos, sin).transpose(1, 2),
                            reference::rope(heads(8, 2), cos, sin).transpose(1, 2),
                            heads(10, 2).transpose(1, 2), {}, 0.0, true, std::nullopt, true)
                            .transpose(1, 2)
                            .reshape({2, seq, 8 * 128});
  ou.backward(d);
  // The same backend on inputs laid out differently may take another algorithm: BF16 noise.
  EXPECT_LT(relative_error(o, ou), 5e-3);
  EXPECT_LT(relative_error(qkv.grad(), qkvu.grad()), 1e-2);
}

// Qwen3's attention with its per-head norms against the norm, RoPE and SDPA composed, on the GPU.
TEST_F(FusedKernels, CausalAttentionWithPerHeadNormsMatchesTheComposition) {
  const AttentionShape shape{8, 2, 128};
  const int64_t seq = 512;
  const double eps = 1e-6;
  const at::Tensor cos = rope_table(seq, 128, true);
  const at::Tensor sin = rope_table(seq, 128, false);
  torch::manual_seed(10);
  const at::Tensor qkv0 = 3.0 * torch::randn({2, seq, (8 + 2 * 2) * 128}, kBf16);
  const at::Tensor qw0 = 1.0 + 0.2 * torch::randn({128}, kGpu);
  const at::Tensor kw0 = 1.0 + 0.2 * torch::randn({128}, kGpu);
  const at::Tensor d = torch::randn({2, seq, 8 * 128}, kBf16);
  at::Tensor qkv = leaf(qkv0), qw = leaf(qw0), kw = leaf(kw0);
  const at::Tensor o = causal_attention(qkv * 1, shape, cos, sin, false, false, {qw, kw, eps});
  o.backward(d);

  at::Tensor qkvu = leaf(qkv0), qwu = leaf(qw0), kwu = leaf(kw0);
  auto heads = [&](int64_t first, int64_t n) {
    return qkvu.narrow(-1, first * 128, n * 128).view({2, seq, n, 128});
  };
  const at::Tensor q = rope(rms_norm(heads(0, 8).contiguous(), qwu, eps), cos, sin);
  const at::Tensor k = rope(rms_norm(heads(8, 2).contiguous(), kwu, eps), cos, sin);
  const at::Tensor ou = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                         heads(10, 2).transpose(1, 2), {}, 0.0,
                                                         true, std::nullopt, true)
                            .transpose(1, 2)
                            .reshape({2, seq, 8 * 128});
  ou.backward(d);
  // The same backend on inputs laid out differently may take another algorithm: BF16 noise.
  EXPECT_LT(relative_error(o, ou), 5e-3);
  EXPECT_LT(relative_error(qkv.grad(), qkvu.grad()), 1e-2);
  EXPECT_LT(relative_error(qw.grad(), qwu.grad()), 1e-2);
  EXPECT_LT(relative_error(kw.grad(), kwu.grad()), 1e-2);
}

// What each producer reports is max |x| of what it wrote, and a tensorwise quantization that
// takes it (skipping its amax pass) gives the bits of one that finds the amax itself. The inputs'
// (and upstream gradients') last rows are scaled up, so that the largest values lie where a
// capped grid reaches only on its last lap and a ragged last block holds rows past the end.
void expect_producers_report_amax(const AttentionShape& shape, int64_t batch, int64_t seq,
                                  int64_t inner) {
  const int64_t hidden = shape.heads * shape.head_dim;
  const int64_t qkv_width = (shape.heads + 2 * shape.kv_heads) * shape.head_dim;
  torch::manual_seed(11);
  const at::Tensor cos = rope_table(seq, shape.head_dim, true);
  const at::Tensor sin = rope_table(seq, shape.head_dim, false);
  const auto last_rows_up = [seq](at::Tensor t) {
    t.narrow(1, seq - 1, 1).mul_(8);
    return t;
  };
  const at::Tensor x0 = torch::randn({batch, seq, hidden}, kBf16);
  const at::Tensor w = 1.0 + 0.1 * torch::randn({hidden}, kGpu);

  // The gradients are caught where the next operator would receive them (a hook on each
  // producer's input), not at the leaves, whose .grad autograd may copy.
  std::vector<std::pair<std::string, at::Tensor>> outputs;
  auto caught = [&outputs](const std::string& what, const at::Tensor& t) {
    t.register_hook([&outputs, what](const at::Tensor& grad) { outputs.emplace_back(what, grad); });
    return t;
  };
  const at::Tensor x = caught("norm backward (into x)", leaf(x0) * 1);
  const at::Tensor r = leaf(x0 * 0.5) * 1;
  auto [h, y] = add_rms_norm(x, r, leaf(w), 1e-5, /*report_amax=*/true);
  outputs.emplace_back("norm forward", y.detach());
  const at::Tensor gu =
      caught("swiglu backward",
             leaf(last_rows_up(3.0 * torch::randn({batch, seq, 2 * inner}, kBf16))) * 1);
  const at::Tensor s = swiglu(gu, true);
  outputs.emplace_back("swiglu forward", s.detach());
  torch::autograd::backward(
      {y, s}, {last_rows_up(torch::randn_like(y)), last_rows_up(torch::randn_like(s))});
  const at::Tensor qkv =
      caught("attention backward (dQKV)", leaf(torch::randn({batch, seq, qkv_width}, kBf16)) * 1);
  causal_attention(qkv, shape, cos, sin, true)
      .backward(last_rows_up(torch::randn({batch, seq, hidden}, kBf16)));
  // Qwen3's: dQ and dK from the per-head norms' backward, dV copied.
  const at::Tensor qkv_n = caught("attention with per-head norms backward (dQKV)",
                                  leaf(torch::randn({batch, seq, qkv_width}, kBf16)) * 1);
  const at::Tensor nw = leaf(1.0 + 0.1 * torch::randn({shape.head_dim}, kGpu));
  causal_attention(qkv_n, shape, cos, sin, true, false, {nw, nw, 1e-6})
      .backward(last_rows_up(torch::randn({batch, seq, hidden}, kBf16)));
  ASSERT_EQ(outputs.size(), 6U);

  for (const auto& [what, t] : outputs) {
    SCOPED_TRACE(what + " of " + std::to_string(batch) + "x" + std::to_string(seq));
    const std::optional<at::Tensor> reported = recall_amax(t);
    ASSERT_TRUE(reported.has_value());
    const float amax = t.abs().max().to(at::kFloat).item<float>();
    EXPECT_EQ(reported->item<int32_t>(), c10::bit_cast<int32_t>(amax));
    const at::Tensor t2 = t.reshape({-1, t.size(-1)});
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e4m3}) {
      const auto [q, qt] = quantize_with_transpose(t2, {format, 0, 0});
      const auto [alone, alone_t] = quantize_with_transpose(t2.clone(), {format, 0, 0});
      EXPECT_TRUE(q.values.equal(alone.values) && q.scales.equal(alone.scales));
      EXPECT_TRUE(qt.values.equal(alone_t.values));
    }
  }
}

TEST_F(FusedKernels, ProducersReportTheAmaxATensorwiseQuantizationFindsAlone) {
  expect_producers_report_amax({8, 2, 128}, 2, 256, 512);
}

// Past kAmaxGridCap blocks of work (the SwiGLU and RoPE grids stride), and rows that leave the
// norm's last block ragged.
TEST_F(FusedKernels, ProducersReportTheAmaxOfLargeAndRaggedTensors) {
  expect_producers_report_amax({16, 4, 128}, 3, 1399, 2048);
}

// Each row's and column's max |x| of what a tensor's producer wrote, as FP32 bits: what SwiGLU
// reports for a quantization per row both ways.

// What a producer remembered for t [rows, cols], asked for lines: each line's max |x| and no
// tensor amax; and a quantization per row both ways that takes them writes the bits of one that
// finds them itself, INT8 and FP8.
void expect_lines_serve_the_row_pair(const at::Tensor& t) {
  const std::optional<at::Tensor> lines = recall_line_amax(t, t.size(-1));
  ASSERT_TRUE(lines.has_value());
  EXPECT_TRUE(lines->equal(line_amax_of(t)));
  EXPECT_FALSE(recall_amax(t).has_value());
  for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e4m3}) {
    const auto [q, qt] = quantize_rowwise_pair(t, {format, 1, 0});
    const auto [alone, alone_t] = quantize_rowwise_pair(t.clone(), {format, 1, 0});
    EXPECT_TRUE(q.values.equal(alone.values) && q.scales.equal(alone.scales));
    EXPECT_TRUE(qt.values.equal(alone_t.values) && qt.scales.equal(alone_t.scales));
  }
}

// SwiGLU's row and column amaxes (int8-row's X, dY under dy=row and int8-row) are each line's
// max |x| of what it wrote; its values are the flat kernel's, bit for bit; and a quantization per
// row both ways that takes them gives the bits of one that finds them itself. On the row pair's
// 128 grid and off it: rows past the last block's, vectors that leave part of a warp idle, the
// largest values in the last row.
TEST_F(FusedKernels, SwigluReportsEachRowsAndColumnsAmax) {
  for (const auto& [rows, inner] : {std::pair<int64_t, int64_t>{256, 512}, {1399, 520}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows, inner " + std::to_string(inner));
    torch::manual_seed(5);
    const at::Tensor gu0 = 3.0 * torch::randn({rows, 2 * inner}, kBf16);
    gu0.narrow(0, rows - 1, 1).mul_(8);
    const at::Tensor d = torch::randn({rows, inner}, kBf16);
    const at::Tensor gu = leaf(gu0);
    const at::Tensor out = swiglu(gu, /*report_amax=*/false, false, {true, true});
    const at::Tensor dgu = torch::autograd::grad({out}, {gu}, {d})[0];
    const at::Tensor flat_gu = leaf(gu0);
    const at::Tensor flat = swiglu(flat_gu);
    const at::Tensor flat_dgu = torch::autograd::grad({flat}, {flat_gu}, {d})[0];
    EXPECT_TRUE(out.equal(flat));
    EXPECT_TRUE(dgu.equal(flat_dgu));
    for (const auto& [what, t] :
         {std::pair<const char*, at::Tensor>{"forward", out.detach()}, {"backward", dgu}}) {
      SCOPED_TRACE(what);
      expect_lines_serve_the_row_pair(t);
    }
  }
}

// Attention's backward asked for lines remembers dQKV's rows' and columns' amaxes and no
// tensor amax, and a quantization per row both ways that takes them writes the bits of one that
// finds them itself; with per-head norms (Qwen3) it reports none.
TEST_F(FusedKernels, AttentionBackwardReportsEachRowsAndColumnsAmaxOfDqkv) {
  const AttentionShape shape{8, 2, 128};
  const int64_t seq = 200;
  const at::Tensor cos = rope_table(seq, shape.head_dim, true);
  const at::Tensor sin = rope_table(seq, shape.head_dim, false);
  const int64_t width = (shape.heads + 2 * shape.kv_heads) * shape.head_dim;
  torch::manual_seed(9);
  for (const bool qk_norm : {false, true}) {
    SCOPED_TRACE(qk_norm ? "per-head norms" : "RoPE");
    const at::Tensor nw = leaf(1.0 + 0.1 * torch::randn({shape.head_dim}, kGpu));
    const QkNorms norms = qk_norm ? QkNorms{nw, nw, 1e-6} : QkNorms{};
    const at::Tensor qkv = leaf(torch::randn({2, seq, width}, kBf16));
    const at::Tensor o = causal_attention(qkv, shape, cos, sin, /*report_amax=*/true, false, norms,
                                          /*report_lines=*/true);
    const at::Tensor dqkv =
        torch::autograd::grad({o}, {qkv}, {torch::randn({2, seq, 8 * 128}, kBf16)})[0];
    if (qk_norm) {
      EXPECT_FALSE(recall_line_amax(dqkv, width).has_value());
      EXPECT_TRUE(recall_amax(dqkv).has_value());
      continue;
    }
    expect_lines_serve_the_row_pair(dqkv.view({-1, width}));
  }
}

// A recipe that quantizes per row both ways steps a layer to the same bits whether SwiGLU and
// RoPE's backward report their lines' amaxes or each quantization finds them: the layer's output,
// and the gradients of the MLP's weights, which backward computes before attention's (whose cuDNN
// backward may sum in another order from run to run: the rest within 1e-2).
TEST(LineAmaxOnGpu, ALayerStepsToTheSameBitsWithProducersLineAmaxes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  const workloads::ModelConfig model = workloads::builtin_model("small");
  const int64_t seq = 256;
  const at::Tensor cos = rope_table(seq, model.head_dim, true);
  const at::Tensor sin = rope_table(seq, model.head_dim, false);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(gpu);
  for (const char* name : {"int8-row", "int8-tensor:dy=row"}) {
    SCOPED_TRACE(name);
    test_support::LayerStep step[2];
    for (const bool producer_amax : {false, true}) {
      torch::manual_seed(5);
      workloads::PrecisionPlan plan(kernels::parse_recipe(name), gpu, workloads::Fusion::fused,
                                    producer_amax);
      workloads::DecoderLayer layer(model, 0, plan);
      layer->to(gpu);
      const at::Tensor x = torch::randn({2, seq, model.hidden_size}, bf16).requires_grad_(true);
      const at::Tensor out = layer->forward(x, cos, sin);
      out.backward(torch::randn_like(out));
      step[producer_amax].y = out.detach();
      for (const auto& p : layer->named_parameters())
        step[producer_amax].grads.emplace_back(p.key(), p.value().grad().clone());
    }
    test_support::expect_same_layer_step(step[0], step[1]);
  }
}

// Delayed scaling on the GPU is the reference's, bit for bit, step after step: the same values
// and scales from the same history, and the same amax recorded by the quantizing pass itself
// (one layout, the transposed one, and both from one pass; a ragged shape, which finds the
// history's amax in a kernel of its own, and a large one, whose one-pass kernel reads the ring
// itself; a step whose values outgrow the history saturates, an Inf too, and a NaN the history
// cannot know becomes 0).
TEST_F(FusedKernels, DelayedScalingMatchesTheReferenceStepAfterStep) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{300, 200}, {4096, 4096}}) {
    for (const NumberFormat format : {NumberFormat::int8, NumberFormat::fp8_e5m2}) {
      const QuantSpec spec{format, 0, 0};
      AmaxHistory gpu_history(3);
      AmaxHistory cpu_history(3);
      torch::manual_seed(21);
      const double sizes[] = {1.0, 0.5, 8.0, 1.0, 1.0};
      for (int step = 0; step < 5; ++step) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + ", step " +
                     std::to_string(step));
        at::Tensor x = (torch::randn({rows, cols}, kGpu) * sizes[step]).to(at::kBFloat16);
        if (step == 4) {
          x[7][3] = std::numeric_limits<float>::quiet_NaN();
          x[9][5] = std::numeric_limits<float>::infinity();  // saturates under a finite history
        }
        const at::Tensor xc = x.cpu();
        const int mode = step % 3;  // as it is, transposed, both layouts from one pass
        Quantized g;
        Quantized c;
        if (mode == 2) {
          auto [gq, gt] = quantize_with_transpose(x, spec, &gpu_history);
          auto [cq, ct] = quantize_with_transpose(xc, spec, &cpu_history);
          EXPECT_TRUE(gt.values.cpu().view(at::kByte).equal(ct.values.view(at::kByte)));
          g = std::move(gq);
          c = std::move(cq);
        } else {
          g = quantize(x, spec, mode == 1, &gpu_history);
          c = quantize(xc, spec, mode == 1, &cpu_history);
        }
        EXPECT_TRUE(g.values.cpu().view(at::kByte).equal(c.values.view(at::kByte)));
        EXPECT_TRUE(g.scales.cpu().equal(c.scales));
        const auto recorded = [](AmaxHistory& h, const at::Tensor& like) {
          return h.scaling_amax(like)->cpu().item<int32_t>();
        };
        if (step < 4) {
          EXPECT_EQ(recorded(gpu_history, x), recorded(cpu_history, xc));
        }
      }
    }
  }
}

// The fused Hadamard quantization is the CPU reference's rotation then quantization, bit for
// bit: X and Xᵀ, every block from 2 to 256, per tensor and per row, INT8 and both FP8 formats; a
// tile-aligned shape with an outlier channel, and ragged ones that leave the last tiles partly
// empty in both directions.
TEST_F(FusedKernels, HadamardQuantizationMatchesTheReferenceBitForBit) {
  torch::manual_seed(23);
  struct Shape {
    int64_t rows, cols;
  };
  for (const Shape shape : {Shape{512, 768}, Shape{72, 1280}, Shape{1160, 96}}) {
    at::Tensor x = torch::randn({shape.rows, shape.cols});
    x.select(1, 5).mul_(60.0);
    x.select(0, 7).mul_(0.01);
    const at::Tensor cpu = x.to(torch::kBFloat16);
    const at::Tensor gpu = cpu.to(kGpu);
    for (const bool transpose : {false, true}) {
      const int64_t k = transpose ? shape.rows : shape.cols;
      for (const int64_t block : {2, 16, 32, 128, 256}) {
        if (k % block != 0) continue;
        for (const QuantSpec spec :
             {QuantSpec{NumberFormat::int8, 0, 0}, QuantSpec{NumberFormat::int8, 1, 0},
              QuantSpec{NumberFormat::fp8_e4m3, 0, 0}, QuantSpec{NumberFormat::fp8_e5m2, 1, 0}}) {
          const std::string where = std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                                    (transpose ? " transposed" : "") +
                                    " b=" + std::to_string(block) + " " +
                                    std::string(to_string(spec.format)) +
                                    (spec.block_rows == 1 ? " per row" : " per tensor");
          ASSERT_TRUE(hadamard_kernel_takes(gpu, transpose, block, spec)) << where;
          const Quantized ours = quantize_hadamard(gpu, transpose, block, spec);
          const Quantized ref = reference::quantize(
              reference::hadamard_rotate(transpose ? cpu.t() : cpu, block), spec);
          EXPECT_TRUE(ours.values.cpu().view(at::kByte).equal(ref.values.view(at::kByte))) << where;
          EXPECT_TRUE(ours.scales.cpu().equal(ref.scales)) << where;
        }
      }
    }
  }
  // The rotation alone (FP32 out) is the reference's, bit for bit, and the scalings the kernel
  // does not quantize itself (blocks, stochastic rounding) quantize those values as the
  // reference does.
  {
    const at::Tensor cpu = torch::randn({192, 512}).to(torch::kBFloat16);
    const at::Tensor gpu = cpu.to(kGpu);
    for (const bool transpose : {false, true}) {
      const at::Tensor rotated = torch::empty({transpose ? 512 : 192, transpose ? 192 : 512},
                                              torch::dtype(torch::kFloat).device(kGpu));
      cuda::HadamardQuantizeArgs a;
      a.x = gpu.data_ptr();
      a.rows = 192;
      a.cols = 512;
      a.ld = 512;
      a.transpose = transpose;
      a.block = 64;
      a.out_type = cuda::DType::fp32;
      a.values = rotated.data_ptr();
      cuda::quantize_hadamard(a, c10::cuda::getCurrentCUDAStream().stream());
      const at::Tensor ref = reference::hadamard_rotate(transpose ? cpu.t() : cpu, 64);
      EXPECT_TRUE(rotated.cpu().equal(ref)) << (transpose ? "transposed" : "direct");
      for (const QuantSpec spec : {QuantSpec{NumberFormat::int8, 1, 128},
                                   QuantSpec{NumberFormat::int8, 0, 0, Rounding::stochastic}}) {
        EXPECT_FALSE(hadamard_kernel_takes(gpu, transpose, 64, spec));
        seed_stochastic_rounding(5);
        const Quantized ours = quantize_hadamard(gpu, transpose, 64, spec);
        seed_stochastic_rounding(5);
        const Quantized expected = kernels::quantize(ref, spec);
        EXPECT_TRUE(ours.values.cpu().equal(expected.values));
        EXPECT_TRUE(ours.scales.cpu().equal(expected.scales));
      }
    }
  }
  // Where the kernel does not apply (a block past 256, an odd operand side), the torch path
  // gives the same definition.
  const at::Tensor cpu = torch::randn({256, 1024}).to(torch::kBFloat16);
  const QuantSpec spec{NumberFormat::int8, 0, 0};
  EXPECT_FALSE(hadamard_kernel_takes(cpu.to(kGpu), false, 512, spec));
  EXPECT_TRUE(quantize_hadamard(cpu.to(kGpu), false, 512, spec)
                  .values.cpu()
                  .equal(reference::quantize(reference::hadamard_rotate(cpu, 512), spec).values));
  const at::Tensor odd = torch::randn({250, 1024}).to(torch::kBFloat16);
  EXPECT_FALSE(hadamard_kernel_takes(odd.to(kGpu), true, 2, spec));
  EXPECT_TRUE(quantize_hadamard(odd.to(kGpu), false, 64, spec)
                  .values.cpu()
                  .equal(reference::quantize(reference::hadamard_rotate(odd, 64), spec).values));
}

// Where rows are whole blocks of 128, the norms' and SwiGLU's kernels write the INT8 copy
// themselves and their backward kernels read it: the copy's bytes are the block kernel's
// (checked at the kernel's arguments), the outputs are the BF16-saved path's, and the gradients
// are those of the same kernels reading the restored BF16 input, bit for bit. Odd row counts leave
// half a warp idle at the end (SwiGLU) and rows of 128 put 16 rows in a norm block; one block is
// all zeros and one holds a value 1000 times the rest.
TEST(SavedInt8OnGpu, TheNormAndSwigluKernelsKeepAndReadTheCopyThemselves) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto restored = [](const at::Tensor& t) {
    return restore_activation(save_activation(t, true), torch::kBFloat16);
  };
  const auto with_outliers = [](at::Tensor t) {
    t.index_put_({1, torch::indexing::Slice(0, 128)}, 0.0);
    t.index_put_({2, 5}, 3000.0);
    return t;
  };
  torch::manual_seed(23);
  for (const int64_t inner : {384, 11008}) {
    const int64_t rows = 37;
    const at::Tensor gu0 = with_outliers(3 * torch::randn({rows, 2 * inner}, kBf16));
    const at::Tensor d = torch::randn({rows, inner}, kBf16);
    // The copy, from the kernel's arguments.
    const SavedActivation room = int8_room(gu0);
    at::Tensor out = torch::empty({rows, inner}, kBf16);
    cuda::SwigluArgs a;
    a.gate_up = gu0.data_ptr();
    a.rows = rows;
    a.inner = inner;
    a.out = out.data_ptr();
    a.keep = blocks_of(room);
    cuda::swiglu_forward(a, c10::cuda::getCurrentCUDAStream().stream());
    const SavedActivation expected = save_activation(gu0, true);
    EXPECT_TRUE(room.values.equal(expected.values)) << inner;
    EXPECT_TRUE(room.scales.equal(expected.scales)) << inner;
    // The autograd path.
    at::Tensor gu = leaf(gu0);
    at::Tensor gr = leaf(restored(gu0));
    const at::Tensor y = swiglu(gu, false, true);
    EXPECT_TRUE(y.equal(swiglu(gu0, false, false))) << inner;
    y.backward(d);
    swiglu(gr, false, false).backward(d);
    EXPECT_TRUE(gu.grad().equal(gr.grad())) << inner;
  }
  // The norms: the copy from the forward kernel's arguments (of x, or of the residual sum), the
  // backward kernel reading it against the same kernel reading its restore (the forward's rstd
  // either way: the backward rescales the restored input by it), then the autograd path.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (const int64_t cols : {128, 512, 4096}) {
    for (const bool residual : {false, true}) {
      const int64_t rows = 37;
      const at::Tensor x0 = with_outliers(torch::randn({rows, cols}, kBf16));
      const at::Tensor r0 = torch::randn({rows, cols}, kBf16);
      const at::Tensor w0 = 1 + 0.1 * torch::randn({cols}, kBf16.dtype(torch::kFloat));
      const at::Tensor d = torch::randn({rows, cols}, kBf16);
      const at::Tensor h = residual ? torch::empty_like(x0) : x0;
      const at::Tensor y = torch::empty_like(x0);
      const at::Tensor rstd = torch::empty({rows}, w0.options());
      const SavedActivation room = int8_room(x0);
      cuda::RmsNormArgs a;
      a.x = x0.data_ptr();
      a.residual = residual ? r0.data_ptr() : nullptr;
      a.weight = w0.data_ptr<float>();
      a.rows = rows;
      a.cols = cols;
      a.h = residual ? h.data_ptr() : nullptr;
      a.y = y.data_ptr();
      a.rstd = rstd.data_ptr<float>();
      a.keep = blocks_of(room);
      cuda::rmsnorm_forward(a, stream);
      const SavedActivation expected = save_activation(h, true);
      EXPECT_TRUE(room.values.equal(expected.values)) << cols << residual;
      EXPECT_TRUE(room.scales.equal(expected.scales)) << cols << residual;

      const at::Tensor restored_h = restore_activation(room, torch::kBFloat16);
      const at::Tensor dh_in = torch::randn({rows, cols}, kBf16);
      const auto backward = [&](bool from_copy, const at::Tensor& more) {
        at::Tensor dh = torch::empty_like(x0);
        at::Tensor dw = torch::empty({cols}, w0.options());
        const at::Tensor workspace =
            torch::empty({static_cast<int64_t>(cuda::rmsnorm_backward_workspace_bytes(rows, cols))},
                         kBf16.dtype(torch::kByte));
        cuda::RmsNormBackwardArgs b;
        b.dy = d.data_ptr();
        if (from_copy) {
          b.h_kept = kept_blocks_of(room);
        } else {
          b.h = restored_h.data_ptr();
        }
        b.weight = w0.data_ptr<float>();
        b.rstd = rstd.data_ptr<float>();
        b.dh_in = more.defined() ? more.data_ptr() : nullptr;
        b.rows = rows;
        b.cols = cols;
        b.dh = dh.data_ptr();
        b.dweight = dw.data_ptr<float>();
        b.workspace = workspace.data_ptr();
        cuda::rmsnorm_backward(b, stream);
        return std::make_pair(dh, dw);
      };
      const auto from_copy = backward(true, dh_in);
      const auto from_restore = backward(false, dh_in);
      EXPECT_TRUE(from_copy.first.equal(from_restore.first)) << cols << residual;
      EXPECT_TRUE(from_copy.second.equal(from_restore.second)) << cols << residual;

      // The autograd path: the forward's outputs unchanged, the gradients the kernel's from the
      // copy (no gradient along the residual path: the one reaching h is zero).
      const auto expected_grads = backward(true, at::Tensor());
      at::Tensor x = leaf(x0), r = leaf(r0), w = leaf(w0);
      const at::Tensor out = residual ? add_rms_norm(x, r, w, 1e-5, false, true).second
                                      : rms_norm(x, w, 1e-5, false, true);
      EXPECT_TRUE(out.equal(y)) << cols << residual;
      out.backward(d);
      EXPECT_TRUE(x.grad().equal(expected_grads.first)) << cols << residual;
      EXPECT_TRUE(w.grad().equal(expected_grads.second)) << cols << residual;
      if (residual) {
        EXPECT_TRUE(r.grad().equal(expected_grads.first)) << cols;
      }
    }
  }
}

}  // namespace
}  // namespace lpbench::kernels

namespace lpbench::workloads {
namespace {

using lpbench::test_support::leaf;
using lpbench::test_support::relative_error;

// The whole fused step on the GPU: the same logits and gradients as the unfused decoder (BF16,
// and int8-tensor within its own error), and the same loss after steps of training.
// saved=int8 on the GPU: the block kernel's INT8 copy and its restore (the restore kernel where
// rows are a multiple of 16, torch's ops otherwise) are the CPU's bit for bit: llama2-7b's
// SwiGLU input width, a ragged last block on the kernel (208) and off it (200).
TEST(SavedInt8OnGpu, TheCopyAndItsRestoreAreTheReferences) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  torch::manual_seed(21);
  for (const int64_t cols : {22016, 208, 200}) {
    const torch::Tensor x = (3 * torch::randn({64, cols})).to(torch::kBFloat16);
    const kernels::SavedActivation cpu = kernels::save_activation(x, true);
    const kernels::SavedActivation dev = kernels::save_activation(x.to(gpu), true);
    EXPECT_TRUE(dev.values.cpu().equal(cpu.values)) << cols;
    EXPECT_TRUE(dev.scales.cpu().equal(cpu.scales)) << cols;
    EXPECT_TRUE(kernels::restore_activation(dev, torch::kBFloat16)
                    .cpu()
                    .equal(kernels::restore_activation(cpu, torch::kBFloat16)))
        << cols;
  }
}

// A model step under int8-dataflow has the forward of int8-block exactly (only what backward
// reads changed) and trains to finite losses within 2 % of it, with and without per-head norms.
TEST(SavedInt8OnGpu, AModelStepKeepsTheForwardAndTrains) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  TrainingOptions o;
  o.micro_batch = 4;
  o.seq_len = 64;
  o.total_steps = 12;
  o.lr = 3e-3;
  o.lr_warmup_steps = 2;
  o.fusion = Fusion::fused;
  const char* recipes[2] = {"int8-block", "int8-dataflow"};
  // Also with Qwen3's per-head norms of q and k, whose attention keeps qkv alone.
  for (const bool qk_norm : {false, true}) {
    ModelConfig config = builtin_model("tiny");
    config.qk_norm = qk_norm;
    std::vector<double> losses[2];
    for (int r = 0; r < 2; ++r) {
      auto model = make_workload(parse_workload("model:tiny"), config,
                                 kernels::parse_recipe(recipes[r]), o, gpu);
      for (int64_t step = 0; step < o.total_steps; ++step) {
        losses[r].push_back(*model->step(step).loss);
        EXPECT_TRUE(std::isfinite(losses[r].back())) << recipes[r] << " step " << step;
      }
    }
    EXPECT_EQ(losses[0][0], losses[1][0]) << qk_norm;
    EXPECT_LT(std::abs(losses[1].back() - losses[0].back()), 0.02 * losses[0].back()) << qk_norm;
  }
}

TEST(FusedStepOnGpu, TheFusedDecoderAndModelLevelMatchTheUnfusedOnes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device gpu(torch::kCUDA, 0);
  ModelConfig config = builtin_model("tiny");
  config.head_dim = 64;
  config.num_heads = config.hidden_size / 64;
  config.num_kv_heads = config.num_heads;
  torch::manual_seed(2);  // the same tokens whatever ran before
  const torch::Tensor tokens =
      torch::randint(0, config.vocab_size, {2, 64}, torch::TensorOptions(torch::kLong).device(gpu));
  auto run = [&](const char* recipe, Fusion fusion) {
    torch::manual_seed(3);
    Decoder decoder(config, kernels::recipe_by_name(recipe), 64, gpu, fusion);
    decoder->to(gpu);
    const torch::Tensor logits = decoder->forward(tokens);
    logits.to(torch::kFloat).pow(2).mean().backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : decoder->parameters())
      grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return std::make_pair(logits.detach(), grads);
  };
  const auto bf16 = run("bf16", Fusion::none);
  for (const char* recipe : {"bf16", "int8-tensor"}) {
    const auto none = run(recipe, Fusion::none);
    const auto fused = run(recipe, Fusion::fused);
    // Within 1 %, or (int8-tensor) within the recipe's own error against BF16: a rounding that
    // differs in BF16 moves a value across an INT8 step now and then.
    const double own_logits = relative_error(none.first, bf16.first);
    EXPECT_LT(relative_error(fused.first, none.first), std::max(1e-2, own_logits)) << recipe;
    for (size_t p = 0; p < none.second.size(); ++p) {
      if (none.second[p].norm().item<double>() == 0.0) continue;
      const double own = relative_error(none.second[p], bf16.second[p]);
      EXPECT_LT(relative_error(fused.second[p], none.second[p]), std::max(2e-2, own))
          << recipe << " parameter " << p;
    }
  }

  // Qwen3's per-head norms of q and k: the fused attention's own path (qk_norm_rope).
  config.qk_norm = true;
  const auto none = run("bf16", Fusion::none);
  const auto fused = run("bf16", Fusion::fused);
  EXPECT_LT(relative_error(fused.first, none.first), 1e-2) << "qk_norm";
  ASSERT_EQ(fused.second.size(), none.second.size());
  for (size_t p = 0; p < none.second.size(); ++p) {
    if (none.second[p].norm().item<double>() == 0.0) continue;
    EXPECT_LT(relative_error(fused.second[p], none.second[p]), 2e-2) << "qk_norm parameter " << p;
  }
  config.qk_norm = false;

  TrainingOptions o;
  o.micro_batch = 8;
  o.seq_len = 64;
  o.total_steps = 40;
  o.lr = 3e-3;
  o.lr_warmup_steps = 4;
  double losses[2] = {0.0, 0.0};
  for (const Fusion fusion : {Fusion::none, Fusion::fused}) {
    o.fusion = fusion;
    auto model = make_workload(parse_workload("model:tiny"), builtin_model("tiny"),
                               kernels::recipe_by_name("bf16"), o, gpu);
    for (int64_t step = 0; step < o.total_steps; ++step)
      losses[fusion == Fusion::fused ? 1 : 0] = *model->step(step).loss;
  }
  EXPECT_LT(std::abs(losses[1] - losses[0]), 0.02 * losses[0]) << losses[0] << " " << losses[1];
}

}  // namespace
}  // namespace lpbench::workloads

namespace lpbench::kernels {
namespace {

// The multi-tensor AdamW kernel against libtorch's fused AdamW on the same GPU, over three steps:
// tensors that take the 16-byte path and span several blocks, a size off the vector width, an
// unaligned view (both on the element path), per-tensor step counts, a clipping scale, and BF16
// copies written from the updated masters (bit for bit the cast a refresh makes).
TEST(FusedAdamW, TheKernelStepsAsLibtorchsFusedAdamWAndWritesTheCopiesWithTheirAmax) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the kernel is not run";
  ASSERT_TRUE(adamw_on_kernel(torch::Device(torch::kCUDA, 0)));
  torch::manual_seed(11);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA, 0);
  const torch::Tensor backing = torch::randn({300001}, f32);
  const float before_view = backing[0].item<float>();
  std::vector<torch::Tensor> ours = {torch::randn({4096, 96}, f32), torch::randn({1000003}, f32),
                                     backing.narrow(0, 1, 300000), torch::randn({4096}, f32)};
  std::vector<torch::Tensor> theirs;
  std::vector<torch::Tensor> m[2], v[2];
  for (const torch::Tensor& p : ours) {
    theirs.push_back(p.clone());
    for (int s = 0; s < 2; ++s) {
      m[s].push_back(torch::zeros_like(p).contiguous());
      v[s].push_back(torch::zeros_like(p).contiguous());
    }
  }
  std::vector<torch::Tensor> copies = {torch::empty({4096, 96}, kBf16), torch::Tensor(),
                                       torch::empty({300000}, kBf16), torch::empty({4096}, kBf16)};
  const AdamwHyper hyper{3e-3, 0.9, 0.95, 1e-8, 0.1};
  std::vector<int64_t> steps = {0, 2, 0, 6};
  for (int step = 0; step < 3; ++step) {
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : ours)
      grads.push_back(torch::randn(p.sizes(), f32) * (step + 1));
    for (int64_t& s : steps)
      ++s;
    const torch::Tensor scale = torch::full({}, 2.5, f32);
    adamw_step(ours, grads, m[0], v[0], copies, steps, hyper, scale, /*copy_amax=*/true);
    std::vector<torch::Tensor> step_tensors;
    for (const int64_t s : steps)
      step_tensors.push_back(torch::full({}, static_cast<double>(s), f32));
    at::_fused_adamw_(theirs, grads, m[1], v[1], {}, step_tensors, hyper.lr, hyper.beta1,
                      hyper.beta2, hyper.weight_decay, hyper.eps, false, false, scale, {});
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_LT(relative_error(ours[i], theirs[i]), 1e-6) << "tensor " << i << ", step " << step;
      EXPECT_LT(relative_error(m[0][i], m[1][i]), 1e-6) << "tensor " << i;
      EXPECT_LT(relative_error(v[0][i], v[1][i]), 1e-6) << "tensor " << i;
      if (copies[i].defined()) {
        EXPECT_TRUE(copies[i].equal(ours[i].to(torch::kBFloat16))) << "tensor " << i;
        // The kernel's max |copy| is found by a tensorwise quantization of the copy, and is
        // the copy's own: the amax of the BF16 values, as FP32 bits.
        const std::optional<at::Tensor> amax = recall_amax(copies[i]);
        ASSERT_TRUE(amax.has_value()) << "tensor " << i;
        const at::Tensor want =
            copies[i].abs().max().to(torch::kFloat).reshape({1}).view(torch::kInt);
        EXPECT_TRUE(amax->equal(want)) << "tensor " << i << ", step " << step;
      }
    }
  }
  EXPECT_EQ(backing[0].item<float>(), before_view);  // only the view moved
}

// On the GPU too, the embedding's gradient by rows holds the dense backward's rows to the bit:
// 4096 tokens over 300 of 1000 rows, most rows summing several tokens.
TEST(EmbeddingOnGpu, TheGradientByRowsHoldsTheDenseGradientsRows) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(13);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA, 0);
  const torch::Tensor master = torch::randn({1000, 64}, f32).requires_grad_(true);
  const torch::Tensor tokens =
      torch::randint(0, 300, {2, 2048}, torch::TensorOptions().dtype(torch::kLong).device(kGpu));
  const torch::Tensor d = torch::randn({2, 2048, 64}, f32).to(torch::kBFloat16);
  embedding(master, tokens, torch::kBFloat16, /*gradient_by_rows=*/true).backward(d);
  ASSERT_TRUE(master.grad().is_sparse());
  const torch::Tensor g = master.grad().coalesce();
  EXPECT_TRUE(g._values().equal(master.grad()._values()));
  EXPECT_TRUE(g.to_dense().equal(
      at::embedding_dense_backward(d.to(torch::kFloat), tokens, 1000, -1, false)));
}

// A gradient by rows (the embedding's, kernels/torch/embedding.h) steps the table as the dense
// gradient it stands for: the rows it holds by their gradient, the others by a zero one, bit for
// bit (masters, moments and copies), on the 16-byte path (width 96) and the element path (width
// 5), beside a dense tensor in the same launch.
TEST(FusedAdamW, AGradientByRowsStepsAsTheDenseGradientItStandsFor) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the kernel is not run";
  torch::manual_seed(12);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA, 0);
  const auto i64 = torch::TensorOptions().dtype(torch::kLong).device(torch::kCUDA, 0);
  for (const int64_t width : {int64_t{96}, int64_t{5}}) {
    const torch::Tensor start = torch::randn({1000, width}, f32);
    const torch::Tensor other = torch::randn({777}, f32);
    // Moments from earlier steps, so that the rows without a gradient have some to decay.
    const torch::Tensor m0 = torch::rand_like(start);
    const torch::Tensor v0 = torch::rand_like(start);
    std::vector<torch::Tensor> p[2], m[2], v[2], c[2];
    for (int s = 0; s < 2; ++s) {
      p[s] = {start.clone(), other.clone()};
      m[s] = {m0.clone(), torch::zeros_like(other)};
      v[s] = {v0.clone(), torch::zeros_like(other)};
      c[s] = {torch::empty({1000, width}, kBf16), torch::Tensor()};
    }
    const AdamwHyper hyper{3e-3, 0.9, 0.95, 1e-8, 0.1};
    for (int64_t step = 1; step <= 2; ++step) {
      const torch::Tensor rows = torch::tensor({0, 7, 8, 500, 999}, i64);
      const torch::Tensor values = torch::randn({5, width}, f32);
      const torch::Tensor sparse =
          torch::sparse_coo_tensor(rows.view({1, 5}), values, {1000, width}).coalesce();
      const torch::Tensor dense = sparse.to_dense();
      const torch::Tensor g_other = torch::randn({777}, f32);
      const torch::Tensor scale = torch::full({}, 1.5, f32);
      adamw_step(p[0], {sparse, g_other}, m[0], v[0], c[0], {step, step}, hyper, scale);
      adamw_step(p[1], {dense, g_other}, m[1], v[1], c[1], {step, step}, hyper, scale);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(p[0][i].equal(p[1][i])) << "width " << width << ", tensor " << i;
        EXPECT_TRUE(m[0][i].equal(m[1][i])) << "width " << width << ", tensor " << i;
        EXPECT_TRUE(v[0][i].equal(v[1][i])) << "width " << width << ", tensor " << i;
      }
      EXPECT_TRUE(c[0][0].equal(c[1][0])) << "width " << width;
      // The rows without a gradient moved too (weight decay, the moments' decay).
      EXPECT_FALSE(p[0][0][1].equal(start[1])) << "width " << width;
    }
  }
}

}  // namespace
}  // namespace lpbench::kernels
