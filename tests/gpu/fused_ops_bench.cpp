// fused_ops_bench: the memory-bound kernels of one decoder layer's fused training step (RMSNorm
// with and without the residual, each way; SwiGLU each way; RoPE of q and k and its backward, or
// Qwen3's per-head norms with RoPE; the output layer's softmax cross-entropy; the producers'
// quantizations under delayed scaling beside the launches they replace; a layer's weights quantized
// in one launch and in four), each timed alone at a seed model's shapes and set against the HBM
// rate its bytes allow: the figure issue 22 asks to be ≥ 70 % for every non-GEMM kernel.
//
// Bytes are the ones the operator must move: its BF16 inputs read once and its outputs written
// once. What a kernel moves beyond them (the norm backwards' FP32 partial rows of the weight
// gradient, the cos and sin tables, the weights) is its own cost and not counted. Producers run
// as the int8-tensor step runs them, reporting the amax of what they write.
//
// Timing: launch_timing.h, --batch back-to-back calls a sample (default 20, the queue kept full
// as in a training step), inputs rotated over two copies. The rate is set against the HBM peak
// the device reports (memory clock × bus width × 2), against a 1 GiB device-to-device copy timed
// in the same process, and against a copy moving the row's own bytes, timed the same way: what a
// launch of that size reaches, where a small kernel's ramp and drain weigh more than a large one's.
//
//   fused_ops_bench [--models llama2-7b,qwen3-8b] [--tokens 4096] [--samples 30] [--batch 20]
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/qk_norm_rope.cuh"
#include "kernels/cuda/quantize_tensorwise.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/reference/cross_entropy.h"
#include "kernels/torch/linear_cross_entropy.h"
#include "tests/gpu/launch_timing.h"
#include "workloads/models/model_zoo.h"

namespace {

using namespace lpbench;
using tools::time_ms;
using tools::Timing;

const auto kCuda = torch::TensorOptions().device(torch::kCUDA);
const auto kBf16 = kCuda.dtype(at::kBFloat16);
const auto kFloat = kCuda.dtype(at::kFloat);
constexpr int kCopies = 2;

struct Bench {
  int samples = 30;
  int batch = 20;
  double peak_gbs = 0;    // the HBM rate the device reports
  double copy_gbs = 0;    // a 1 GiB device-to-device copy's, measured
  double worst = 1e9;     // the lowest share of peak over the rows a step runs
  std::string worst_row;  // which row that was
  // Buffers for a copy that moves as many bytes as a row's kernel: kCopies sources and
  // destinations, rotated as the kernels' inputs are.
  std::vector<at::Tensor> copy_src, copy_dst;

  // A device-to-device copy moving `bytes` (half read, half written), timed as the kernels are:
  // what one launch of that size can reach, its ramp and drain included.
  Timing same_size_copy(double bytes) {
    const auto half = static_cast<int64_t>(bytes / 2) / 16 * 16;
    if (copy_src.empty() || copy_src[0].numel() < half) {
      copy_src.clear();
      copy_dst.clear();
      for (int i = 0; i < kCopies; ++i) {
        copy_src.push_back(torch::empty({half}, kCuda.dtype(at::kByte)));
        copy_dst.push_back(torch::empty({half}, kCuda.dtype(at::kByte)));
      }
    }
    return time_ms(
        [&](int i) {
          LPBENCH_CUDA_CHECK(cudaMemcpyAsync(copy_dst[i].data_ptr(), copy_src[i].data_ptr(), half,
                                             cudaMemcpyDeviceToDevice, nullptr));
        },
        kCopies, samples, batch);
  }

  // One kernel's row: fn(copy) launches it on the default stream.
  // `alternative`: a row timing another way of doing what a row before it does (a launch each),
  // shown beside it but not counted in "lowest", which is about the kernels a step runs.
  void row(const std::string& model, const std::string& name, double bytes,
           const std::function<void(int)>& fn, bool alternative = false) {
    const Timing t = time_ms(fn, kCopies, samples, batch);
    const double gbs = bytes / t.median / 1e6;
    const double of_peak = 100.0 * gbs / peak_gbs;
    if (!alternative && of_peak < worst) {
      worst = of_peak;
      worst_row = model + " " + name;
    }
    const double same_gbs = bytes / same_size_copy(bytes).median / 1e6;
    std::printf("%-10s %-34s %8.1f %8.4f (%.4f-%.4f) %7.0f %6.0f%% %6.0f%% %7.0f %6.0f%%\n",
                model.c_str(), name.c_str(), bytes / 1e6, t.median, t.p10, t.p90, gbs, of_peak,
                100.0 * gbs / copy_gbs, same_gbs, 100.0 * gbs / same_gbs);
  }
};

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ','))
    if (!name.empty()) names.push_back(name);
  return names;
}

const char* string_flag(int argc, char** argv, const char* flag, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return fallback;
}

int int_flag(int argc, char** argv, const char* flag, int fallback) {
  const char* v = string_flag(argc, argv, flag, nullptr);
  return v != nullptr ? std::atoi(v) : fallback;
}

uint32_t* word(const at::Tensor& t) {
  return reinterpret_cast<uint32_t*>(t.data_ptr<int32_t>());
}

// kCopies of a tensor of `sizes`, filled with N(0, 1) values (the kernels' speed does not depend
// on them, but NaNs or denormals from uninitialized memory could).
std::vector<at::Tensor> copies(at::IntArrayRef sizes, const torch::TensorOptions& options) {
  std::vector<at::Tensor> out;
  for (int i = 0; i < kCopies; ++i)
    out.push_back(torch::randn(sizes, options));
  return out;
}

void norms(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  const int64_t h = m.hidden_size;
  const double one = 2.0 * tokens * h;  // one BF16 [tokens, hidden] read or write
  const auto x = copies({tokens, h}, kBf16), r = copies({tokens, h}, kBf16);
  const auto y = copies({tokens, h}, kBf16), hs = copies({tokens, h}, kBf16);
  const auto dy = copies({tokens, h}, kBf16), dh_in = copies({tokens, h}, kBf16);
  const at::Tensor weight = torch::ones({h}, kFloat), dweight = torch::empty({h}, kFloat);
  const at::Tensor rstd = torch::ones({tokens}, kFloat),
                   amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  const at::Tensor workspace =
      torch::empty({static_cast<int64_t>(cuda::rmsnorm_backward_workspace_bytes(tokens, h))},
                   kCuda.dtype(at::kByte));
  for (const bool residual : {false, true}) {
    b.row(m.name, residual ? "rmsnorm forward, + residual" : "rmsnorm forward",
          (residual ? 4 : 2) * one, [&](int i) {
            cuda::RmsNormArgs a;
            a.x = x[i].data_ptr();
            a.residual = residual ? r[i].data_ptr() : nullptr;
            a.weight = weight.data_ptr<float>();
            a.rows = tokens;
            a.cols = h;
            a.h = residual ? hs[i].data_ptr() : nullptr;
            a.y = y[i].data_ptr();
            a.rstd = rstd.data_ptr<float>();
            a.y_amax = word(amax);
            cuda::rmsnorm_forward(a, nullptr);
          });
  }
  for (const bool add : {false, true}) {
    b.row(m.name, add ? "rmsnorm backward, + dh_in" : "rmsnorm backward", (add ? 4 : 3) * one,
          [&](int i) {
            cuda::RmsNormBackwardArgs a;
            a.dy = dy[i].data_ptr();
            a.h = hs[i].data_ptr();
            a.weight = weight.data_ptr<float>();
            a.rstd = rstd.data_ptr<float>();
            a.dh_in = add ? dh_in[i].data_ptr() : nullptr;
            a.rows = tokens;
            a.cols = h;
            a.dh = x[i].data_ptr();
            a.dweight = dweight.data_ptr<float>();
            a.workspace = workspace.data_ptr();
            a.dh_amax = word(amax);
            cuda::rmsnorm_backward(a, nullptr);
          });
  }
}

// The producers' quantizations (docs/perf-log.md §59–§61), as the fused step runs them (INT8, X
// and Xᵀ from one pass; under delayed scaling scaled by a history's amax and recording X's own),
// each after the row of the one-pass quantization of a written X that it replaces: the norm writing
// h and rstd only, then X computed from them as it is quantized; and SwiGLU's output computed from
// gate/up as it is quantized (the SwiGLU forward it replaces is the "swiglu forward, no amax" row).
// Bytes: each operator's BF16 inputs read and its two INT8 layouts written.
void producers_quantize(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  const int64_t h = m.hidden_size, inner = m.intermediate_size;
  const double one = 2.0 * tokens * h;  // one BF16 [tokens, hidden]
  const double one_inner = 2.0 * tokens * inner;
  const auto x = copies({tokens, h}, kBf16), r = copies({tokens, h}, kBf16);
  const auto hs = copies({tokens, h}, kBf16);
  const auto gu = copies({tokens, 2 * inner}, kBf16), out = copies({tokens, inner}, kBf16);
  std::vector<at::Tensor> q, qt;  // the two INT8 layouts written
  for (int i = 0; i < kCopies; ++i) {
    q.push_back(torch::empty({tokens, std::max(h, inner)}, kCuda.dtype(at::kChar)));
    qt.push_back(torch::empty({tokens, std::max(h, inner)}, kCuda.dtype(at::kChar)));
  }
  const at::Tensor weight = torch::ones({h}, kFloat), rstd = torch::ones({tokens}, kFloat);
  const at::Tensor scales = torch::empty({2}, kFloat);
  // A history of four slots: the turn records into slot 0 and zeroes slot 1 at every call, and
  // slots 2 and 3 keep the amax it scales by (4.0, about max |x| of these N(0, 1) inputs).
  at::Tensor ring = torch::zeros({5}, kCuda.dtype(at::kInt));
  ring.narrow(0, 2, 2).fill_(0x40800000);
  const auto delayed = [&](int i, const at::Tensor& input, int64_t cols, int64_t ld) {
    cuda::QuantizeArgs a;
    a.x = input.data_ptr();
    a.rows = tokens;
    a.cols = cols;
    a.ld = ld;
    a.values = q[i].data_ptr();
    a.scales = scales.data_ptr<float>();
    a.values_t = qt[i].data_ptr();
    a.scales_t = scales.data_ptr<float>() + 1;
    a.history = word(ring);
    a.history_slots = 4;
    a.history_current = 0;
    a.delayed = true;
    return a;
  };
  b.row(m.name, "quantize X (delayed, one pass)", 2 * one,
        [&](int i) { cuda::quantize_tensorwise(delayed(i, x[i], h, h), nullptr); });
  // The norm with its residual add writing h and rstd, not y; with `y_amax`, finding y's amax.
  const auto norm_without_y = [&](int i, uint32_t* y_amax) {
    cuda::RmsNormArgs a;
    a.x = x[i].data_ptr();
    a.residual = r[i].data_ptr();
    a.weight = weight.data_ptr<float>();
    a.rows = tokens;
    a.cols = h;
    a.h = hs[i].data_ptr();
    a.rstd = rstd.data_ptr<float>();
    a.y_amax = y_amax;
    cuda::rmsnorm_forward(a, nullptr);
  };
  b.row(m.name, "rmsnorm forward, + residual, no y", 3 * one,
        [&](int i) { norm_without_y(i, nullptr); });
  b.row(m.name, "quantize X from h, rstd (norm)", 2 * one, [&](int i) {
    cuda::quantize_rmsnorm_tensorwise(delayed(i, hs[i], h, h), rstd.data_ptr<float>(),
                                      weight.data_ptr<float>(), nullptr);
  });
  // Current scaling (int8-tensor, fp8-tensor, dy=row's X; §61): the one-pass quantization of
  // the norm's written y by the amax the norm reported (after the "rmsnorm forward, + residual"
  // row, which writes y and its amax), against the norm finding y's amax without writing y, then
  // X computed from h and rstd as it is quantized by that amax.
  const at::Tensor amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  amax.fill_(0x41000000);  // 8.0, above max |x| of these N(0, 1) inputs
  const auto current = [&](int i, const at::Tensor& input) {
    cuda::QuantizeArgs a = delayed(i, input, h, h);
    a.history = nullptr;
    a.delayed = false;
    a.amax = word(amax);
    return a;
  };
  b.row(m.name, "quantize X (own amax, one pass)", 2 * one,
        [&](int i) { cuda::quantize_tensorwise(current(i, x[i]), nullptr); });
  const at::Tensor found = torch::zeros({1}, kCuda.dtype(at::kInt));
  b.row(m.name, "rmsnorm forward, + residual, y's amax, no y", 3 * one,
        [&](int i) { norm_without_y(i, word(found)); });
  b.row(m.name, "quantize X from h, rstd (norm, own amax)", 2 * one, [&](int i) {
    cuda::quantize_rmsnorm_tensorwise(current(i, hs[i]), rstd.data_ptr<float>(),
                                      weight.data_ptr<float>(), nullptr);
  });
  b.row(m.name, "quantize X_down (delayed, one pass)", 2 * one_inner,
        [&](int i) { cuda::quantize_tensorwise(delayed(i, out[i], inner, inner), nullptr); });
  b.row(m.name, "quantize X_down from gate/up (SwiGLU)", 3 * one_inner, [&](int i) {
    cuda::quantize_swiglu_tensorwise(delayed(i, gu[i], inner, 2 * inner), nullptr);
  });
  // SwiGLU's backward under delayed scaling (§65): the one-pass quantization of the written
  // d gate_up by a history's amax (after the "swiglu backward, no amax" row, which writes it),
  // against d gate_up computed from gate/up and d_out as it is quantized; and, for current
  // scaling, the one-pass quantization by the amax the backward reported.
  const auto dgu = copies({tokens, 2 * inner}, kBf16);
  std::vector<at::Tensor> dq, dqt;
  for (int i = 0; i < kCopies; ++i) {
    dq.push_back(torch::empty({tokens, 2 * inner}, kCuda.dtype(at::kChar)));
    dqt.push_back(torch::empty({tokens, 2 * inner}, kCuda.dtype(at::kChar)));
  }
  const auto gradient = [&](int i, const at::Tensor& input, bool by_history) {
    cuda::QuantizeArgs a = delayed(i, input, 2 * inner, 2 * inner);
    a.values = dq[i].data_ptr();
    a.values_t = dqt[i].data_ptr();
    if (!by_history) {
      a.history = nullptr;
      a.delayed = false;
      a.amax = word(amax);
    }
    return a;
  };
  b.row(m.name, "quantize dY_gate_up (own amax, one pass)", 4 * one_inner,
        [&](int i) { cuda::quantize_tensorwise(gradient(i, dgu[i], false), nullptr); });
  b.row(m.name, "quantize dY_gate_up (delayed, one pass)", 4 * one_inner,
        [&](int i) { cuda::quantize_tensorwise(gradient(i, dgu[i], true), nullptr); });
  b.row(m.name, "quantize dY_gate_up from gate/up, d_out (delayed)", 5 * one_inner, [&](int i) {
    cuda::quantize_swiglu_backward_tensorwise(gradient(i, gu[i], true), out[i].data_ptr(), nullptr);
  });
}

// A layer's four dense weights (fused QKV, the output projection, fused gate/up, down) quantized
// both ways by amaxes known already (AdamW's or the layer's one amax pass), as the layer's
// start runs them: in one launch (quantize_tensorwise_batch), and as four launches beside it.
// Bytes: each weight read in BF16 and written in both INT8 layouts.
void weights_quantize(Bench& b, const workloads::ModelConfig& m) {
  const int64_t h = m.hidden_size, inner = m.intermediate_size;
  const int64_t q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  const std::vector<std::pair<int64_t, int64_t>> shapes{
      {q + 2 * kv, h}, {h, q}, {2 * inner, h}, {h, inner}};
  std::vector<std::vector<at::Tensor>> w;  // [weight][copy]
  std::vector<at::Tensor> out, out_t;
  double bytes = 0;
  for (const auto& [rows, cols] : shapes) {
    w.push_back(copies({rows, cols}, kBf16));
    out.push_back(torch::empty({rows, cols}, kCuda.dtype(at::kChar)));
    out_t.push_back(torch::empty({cols, rows}, kCuda.dtype(at::kChar)));
    bytes += 4.0 * static_cast<double>(rows * cols);
  }
  const at::Tensor scales = torch::empty({2 * static_cast<int64_t>(shapes.size())}, kFloat);
  const at::Tensor amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  amax.fill_(0x41000000);  // 8.0, above max |x| of these N(0, 1) weights
  const auto calls = [&](int i) {
    std::vector<cuda::QuantizeArgs> all;
    for (size_t k = 0; k < shapes.size(); ++k) {
      cuda::QuantizeArgs a;
      a.x = w[k][i].data_ptr();
      a.rows = shapes[k].first;
      a.cols = shapes[k].second;
      a.ld = a.cols;
      a.values = out[k].data_ptr();
      a.values_t = out_t[k].data_ptr();
      a.scales = scales.data_ptr<float>() + 2 * k;
      a.scales_t = a.scales + 1;
      a.amax = word(amax);
      all.push_back(a);
    }
    return all;
  };
  const std::vector<cuda::QuantizeArgs> by_copy[kCopies] = {calls(0), calls(1)};
  b.row(m.name, "quantize W x4 (given amax, one launch)", bytes,
        [&](int i) { cuda::quantize_tensorwise_batch(by_copy[i], nullptr); });
  b.row(
      m.name, "quantize W x4 (given amax, 4 launches)", bytes,
      [&](int i) {
        for (const cuda::QuantizeArgs& a : by_copy[i])
          cuda::quantize_tensorwise(a, nullptr);
      },
      /*alternative=*/true);
}

void swiglu(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  const int64_t inner = m.intermediate_size;
  const double one = 2.0 * tokens * inner;
  const auto gu = copies({tokens, 2 * inner}, kBf16), dgu = copies({tokens, 2 * inner}, kBf16);
  const auto out = copies({tokens, inner}, kBf16);
  const at::Tensor amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  // Reporting the tensor's amax (int8-tensor's), then no amax (BF16's launch), then every row's
  // and column's amax instead (int8-row's X, dY under dy=row), which spares the row pair its own
  // pass over them: the same bytes, plus the lines' atomics.
  const at::Tensor lines = torch::zeros({tokens + 2 * inner}, kCuda.dtype(at::kInt));
  enum class Report { tensor_amax, no_amax, line_amax };
  for (const Report report : {Report::tensor_amax, Report::no_amax, Report::line_amax}) {
    const std::string how = report == Report::no_amax     ? ", no amax"
                            : report == Report::line_amax ? ", line amax"
                                                          : "";
    const auto args = [&](int i) {
      cuda::SwigluArgs a;
      a.gate_up = gu[i].data_ptr();
      a.rows = tokens;
      a.inner = inner;
      if (report == Report::tensor_amax) a.amax = word(amax);
      if (report == Report::line_amax) a.line_amax = word(lines);
      return a;
    };
    b.row(m.name, "swiglu forward" + how, 3 * one, [&](int i) {
      cuda::SwigluArgs a = args(i);
      a.out = out[i].data_ptr();
      cuda::swiglu_forward(a, nullptr);
    });
    b.row(m.name, "swiglu backward" + how, 5 * one, [&](int i) {
      cuda::SwigluArgs a = args(i);
      a.d_out = out[i].data_ptr();
      a.d_gate_up = dgu[i].data_ptr();
      cuda::swiglu_backward(a, nullptr);
    });
  }
}

// The fused QKV product's heads as [1, tokens, heads, d]: a token's row holds every head.
cuda::QkNormRopeStrides qkv_strides(const workloads::ModelConfig& m) {
  const int64_t width = (m.num_heads + 2 * m.num_kv_heads) * m.head_dim;
  return {0, width, m.head_dim};
}

void attention_side(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  const int64_t d = m.head_dim, nh = m.num_heads, nkv = m.num_kv_heads;
  const int64_t width = (nh + 2 * nkv) * d;
  const double head = 2.0 * tokens * d;  // one BF16 head over the tokens
  const auto qkv = copies({tokens, width}, kBf16), dqkv = copies({tokens, width}, kBf16);
  // Attention's gradients as SDPA leaves them: [1, heads, tokens, d].
  const auto dq = copies({nh, tokens, d}, kBf16), dk = copies({nkv, tokens, d}, kBf16);
  const auto dv = copies({nkv, tokens, d}, kBf16);
  const at::Tensor cos = torch::rand({tokens, d / 2}, kFloat),
                   sin = torch::rand({tokens, d / 2}, kFloat);
  const at::Tensor amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  const cuda::QkNormRopeStrides fused = qkv_strides(m);
  const cuda::QkNormRopeStrides sdpa{0, d, tokens * d};
  // RoPE from SDPA's gradient `in` ([1, heads, tokens, d]) into dQKV's heads from `first` on:
  // rotated back (dq, dk) or copied (dv, the third part of either backward).
  auto from_sdpa_args = [&](const at::Tensor& in, const at::Tensor& dqkv_i, int64_t first,
                            int64_t heads, bool rotate) {
    cuda::RopeArgs a;
    a.in = in.data_ptr();
    a.out = static_cast<at::BFloat16*>(dqkv_i.data_ptr()) + first * d;
    a.batch = 1;
    a.seq = tokens;
    a.heads = heads;
    a.head_dim = d;
    a.in_token_stride = sdpa.token;
    a.in_head_stride = sdpa.head;
    a.out_token_stride = fused.token;
    a.out_head_stride = fused.head;
    a.cos = cos.data_ptr<float>();
    a.sin = sin.data_ptr<float>();
    a.inverse = true;
    a.rotate = rotate;
    a.amax = word(amax);
    return a;
  };
  auto v_copy = [&](int i) {
    cuda::rope(from_sdpa_args(dv[i], dqkv[i], nh + nkv, nkv, /*rotate=*/false), nullptr);
  };
  if (!m.qk_norm) {
    b.row(m.name, "rope forward (q, k in place)", 2 * (nh + nkv) * head, [&](int i) {
      cuda::RopeArgs a;
      a.in = qkv[i].data_ptr();
      a.out = qkv[i].data_ptr();
      a.batch = 1;
      a.seq = tokens;
      a.heads = nh + nkv;
      a.head_dim = d;
      a.in_token_stride = a.out_token_stride = fused.token;
      a.in_head_stride = a.out_head_stride = fused.head;
      a.cos = cos.data_ptr<float>();
      a.sin = sin.data_ptr<float>();
      cuda::rope(a, nullptr);
    });
    // As the layer's backward runs it: the three parts in one launch (rope_parts).
    b.row(m.name, "rope backward (dq, dk; dv copied)", 2 * (nh + 2 * nkv) * head, [&](int i) {
      const cuda::RopeArgs parts[] = {from_sdpa_args(dq[i], dqkv[i], 0, nh, /*rotate=*/true),
                                      from_sdpa_args(dk[i], dqkv[i], nh, nkv, /*rotate=*/true),
                                      from_sdpa_args(dv[i], dqkv[i], nh + nkv, nkv, false)};
      cuda::rope_parts(parts, 3, nullptr);
    });
    // No amax (BF16's backward): the same kernel without the amax's atomics and grid cap.
    b.row(m.name, "rope backward, no amax", 2 * (nh + 2 * nkv) * head, [&](int i) {
      cuda::RopeArgs parts[] = {from_sdpa_args(dq[i], dqkv[i], 0, nh, /*rotate=*/true),
                                from_sdpa_args(dk[i], dqkv[i], nh, nkv, /*rotate=*/true),
                                from_sdpa_args(dv[i], dqkv[i], nh + nkv, nkv, false)};
      for (cuda::RopeArgs& p : parts)
        p.amax = nullptr;
      cuda::rope_parts(parts, 3, nullptr);
    });
    // Reporting every row's and column's amax of dQKV instead (dY of qkv under int8-row and
    // dy=row), which spares the row pair its own pass: the same bytes, plus the lines' atomics.
    const at::Tensor lines = torch::zeros({tokens + width}, kCuda.dtype(at::kInt));
    b.row(m.name, "rope backward, line amax", 2 * (nh + 2 * nkv) * head, [&](int i) {
      cuda::RopeArgs parts[] = {from_sdpa_args(dq[i], dqkv[i], 0, nh, /*rotate=*/true),
                                from_sdpa_args(dk[i], dqkv[i], nh, nkv, /*rotate=*/true),
                                from_sdpa_args(dv[i], dqkv[i], nh + nkv, nkv, false)};
      const int64_t first[] = {0, nh, nh + nkv};
      for (int p = 0; p < 3; ++p) {
        parts[p].amax = nullptr;
        parts[p].line_amax = word(lines);
        parts[p].line_col = first[p] * d;
      }
      cuda::rope_parts(parts, 3, nullptr);
    });
    // The backward as it ran before the one launch (rotate_back's fallback where a part does
    // not fit the kernel): an alternative, not a kernel a step runs.
    b.row(
        m.name, "rope backward, three launches", 2 * (nh + 2 * nkv) * head,
        [&](int i) {
          cuda::rope(from_sdpa_args(dq[i], dqkv[i], 0, nh, /*rotate=*/true), nullptr);
          cuda::rope(from_sdpa_args(dk[i], dqkv[i], nh, nkv, /*rotate=*/true), nullptr);
          v_copy(i);
        },
        true);
    return;
  }
  const auto qk = copies({tokens, (nh + nkv) * d}, kBf16);
  const at::Tensor weight = torch::ones({d}, kFloat), dweight = torch::empty({2 * d}, kFloat);
  const at::Tensor rstd = torch::ones({tokens * (nh + nkv)}, kFloat);
  const at::Tensor workspace = torch::empty(
      {static_cast<int64_t>(cuda::qk_norm_rope_backward_workspace_bytes(tokens * (nh + nkv), d))},
      kCuda.dtype(at::kByte));
  const cuda::QkNormRopeStrides out_strides{0, (nh + nkv) * d, d};
  // The q heads' arguments (is_q) or the k heads', on the i-th copies of the operands.
  const auto forward_args = [&](int i, bool is_q) {
    cuda::QkNormRopeArgs a;
    a.x = static_cast<const at::BFloat16*>(qkv[i].data_ptr()) + (is_q ? 0 : nh * d);
    a.x_strides = fused;
    a.y = static_cast<at::BFloat16*>(qk[i].data_ptr()) + (is_q ? 0 : nh * d);
    a.y_strides = out_strides;
    a.weight = weight.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>() + (is_q ? 0 : tokens * nh);
    a.batch = 1;
    a.seq = tokens;
    a.heads = is_q ? nh : nkv;
    a.head_dim = d;
    a.cos = cos.data_ptr<float>();
    a.sin = sin.data_ptr<float>();
    return a;
  };
  const auto backward_args = [&](int i, bool is_q) {
    cuda::QkNormRopeBackwardArgs a;
    a.dy = (is_q ? dq : dk)[i].data_ptr();
    a.dy_strides = sdpa;
    a.x = static_cast<const at::BFloat16*>(qkv[i].data_ptr()) + (is_q ? 0 : nh * d);
    a.x_strides = fused;
    a.dx = static_cast<at::BFloat16*>(dqkv[i].data_ptr()) + (is_q ? 0 : nh * d);
    a.dx_strides = fused;
    a.weight = weight.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>() + (is_q ? 0 : tokens * nh);
    a.dweight = dweight.data_ptr<float>() + (is_q ? 0 : d);
    a.workspace = workspace.data_ptr();
    a.dx_amax = word(amax);
    a.batch = 1;
    a.seq = tokens;
    a.heads = is_q ? nh : nkv;
    a.head_dim = d;
    a.cos = cos.data_ptr<float>();
    a.sin = sin.data_ptr<float>();
    return a;
  };
  const int64_t forward_bytes = 2 * (nh + nkv) * head;
  const int64_t backward_bytes = (3 * (nh + nkv) + 2 * nkv) * head;
  b.row(m.name, "qk norm + rope forward (q, k)", forward_bytes, [&](int i) {
    cuda::qk_norm_rope_forward(forward_args(i, true), forward_args(i, false), nullptr);
  });
  // dV copied by the launch of the weight gradients' sums (what the layer runs), and as the copy
  // of its own that it was before (docs/perf-log.md §45).
  const auto dv_copy = [&](int i) {
    cuda::QkNormRopeCopyArgs c;
    c.src = dv[i].data_ptr();
    c.src_strides = sdpa;
    c.dst = static_cast<at::BFloat16*>(dqkv[i].data_ptr()) + (nh + nkv) * d;
    c.dst_strides = fused;
    c.batch = 1;
    c.seq = tokens;
    c.heads = nkv;
    c.head_dim = d;
    c.amax = word(amax);
    return c;
  };
  b.row(m.name, "qk norm + rope backward (dq, dk; dv)", backward_bytes, [&](int i) {
    cuda::qk_norm_rope_backward(backward_args(i, true), backward_args(i, false), dv_copy(i),
                                nullptr);
  });
  b.row(
      m.name, "qk norm + rope backward, dv a launch of its own", backward_bytes,
      [&](int i) {
        cuda::qk_norm_rope_backward(backward_args(i, true), backward_args(i, false), nullptr);
        v_copy(i);
      },
      true);
  b.row(
      m.name, "qk norm + rope forward, a launch each", forward_bytes,
      [&](int i) {
        cuda::qk_norm_rope_forward(forward_args(i, true), nullptr);
        cuda::qk_norm_rope_forward(forward_args(i, false), nullptr);
      },
      true);
  b.row(
      m.name, "qk norm + rope backward, a launch each", backward_bytes,
      [&](int i) {
        cuda::qk_norm_rope_backward(backward_args(i, true), nullptr);
        cuda::qk_norm_rope_backward(backward_args(i, false), nullptr);
        v_copy(i);
      },
      true);
}

// The output layer's loss on its BF16 logits [tokens, vocab], in place: the kernel, the kernel
// loading what it holds with its threads where the copy engine is its default, the kernel at each
// block and cluster size it has, the kernel holding nothing between its passes (each row read
// twice, as §46's did), then the reference's ATen ops a chunk of 1024 tokens at a time (the path it
// replaced on the GPU, the logits' gradient copied into one tensor as that path did). Bytes: the
// logits read once and their gradient written once; what the kernel reads again is its own cost.
// RoPE's backward writing the QKV product's quantized dY under delayed scaling (§66), as the fused
// step runs it for a model without per-head norms: the one-pass quantization of the written dQKV
// (after the "rope backward, no amax" row, which writes it) under a history, against the tile
// kernel computing dQKV from SDPA's dq, dk and dv as it quantizes it; and, for current scaling,
// the one-pass quantization by the amax the backward reported.
void rope_backward_quantize(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  if (m.qk_norm) return;
  const int64_t d = m.head_dim, nh = m.num_heads, nkv = m.num_kv_heads;
  const int64_t width = (nh + 2 * nkv) * d;
  const double one = 2.0 * tokens * width;  // dQKV in BF16
  const auto dqkv = copies({tokens, width}, kBf16);
  const auto dq = copies({nh, tokens, d}, kBf16), dk = copies({nkv, tokens, d}, kBf16);
  const auto dv = copies({nkv, tokens, d}, kBf16);
  const at::Tensor cos = torch::rand({tokens, d / 2}, kFloat),
                   sin = torch::rand({tokens, d / 2}, kFloat);
  std::vector<at::Tensor> q, qt;
  for (int i = 0; i < kCopies; ++i) {
    q.push_back(torch::empty({tokens, width}, kCuda.dtype(at::kChar)));
    qt.push_back(torch::empty({tokens, width}, kCuda.dtype(at::kChar)));
  }
  const at::Tensor scales = torch::empty({2}, kFloat);
  const at::Tensor amax = torch::zeros({1}, kCuda.dtype(at::kInt));
  amax.fill_(0x41000000);  // 8.0, above max |x| of these N(0, 1) inputs
  at::Tensor ring = torch::zeros({5}, kCuda.dtype(at::kInt));  // as producers_quantize's
  ring.narrow(0, 2, 2).fill_(0x40800000);
  const auto args = [&](int i, bool by_history) {
    cuda::QuantizeArgs a;
    a.x = dqkv[i].data_ptr();
    a.rows = tokens;
    a.cols = width;
    a.ld = width;
    a.values = q[i].data_ptr();
    a.scales = scales.data_ptr<float>();
    a.values_t = qt[i].data_ptr();
    a.scales_t = scales.data_ptr<float>() + 1;
    if (by_history) {
      a.history = word(ring);
      a.history_slots = 4;
      a.history_current = 0;
      a.delayed = true;
    } else {
      a.amax = word(amax);
    }
    return a;
  };
  b.row(m.name, "quantize dY_qkv (own amax, one pass)", 2 * one,
        [&](int i) { cuda::quantize_tensorwise(args(i, false), nullptr); });
  b.row(m.name, "quantize dY_qkv (delayed, one pass)", 2 * one,
        [&](int i) { cuda::quantize_tensorwise(args(i, true), nullptr); });
  b.row(m.name, "quantize dY_qkv from dq, dk, dv (delayed)", 2 * one, [&](int i) {
    // SDPA's gradients [1, heads, tokens, d] as the parts of RoPE's backward.
    const at::Tensor* in[] = {&dq[i], &dk[i], &dv[i]};
    const int64_t heads[] = {nh, nkv, nkv};
    cuda::RopeArgs p[3];
    for (int k = 0; k < 3; ++k) {
      p[k].in = in[k]->data_ptr();
      p[k].batch = 1;
      p[k].seq = tokens;
      p[k].heads = heads[k];
      p[k].head_dim = d;
      p[k].in_token_stride = d;
      p[k].in_head_stride = tokens * d;
      p[k].cos = cos.data_ptr<float>();
      p[k].sin = sin.data_ptr<float>();
      p[k].inverse = p[k].rotate = k < 2;
    }
    cuda::quantize_rope_backward_tensorwise(args(i, true), p, nullptr);
  });
}

void output_loss(Bench& b, const workloads::ModelConfig& m, int64_t tokens) {
  const int64_t vocab = m.vocab_size;
  const auto logits = copies({tokens, vocab}, kBf16);
  const at::Tensor targets = torch::randint(0, vocab, {tokens}, kCuda.dtype(at::kLong));
  const at::Tensor loss = torch::empty({tokens}, kFloat);
  const double bytes = 4.0 * tokens * vocab;
  const auto args = [&](int i, int64_t held_bytes, int threads, int cluster, int engine = -1) {
    cuda::CrossEntropyArgs a;
    a.logits = logits[i].data_ptr();
    a.targets = targets.data_ptr<int64_t>();
    a.rows = tokens;
    a.vocab = vocab;
    a.divisor = tokens;
    a.loss = loss.data_ptr<float>();
    a.held_bytes = held_bytes;
    a.block_threads = threads;
    a.cluster_blocks = cluster;
    a.copy_engine = engine;
    return a;
  };
  const auto kernel = [&](int i, int64_t held_bytes, int threads, int cluster, int engine = -1) {
    cuda::softmax_cross_entropy(args(i, held_bytes, threads, cluster, engine), nullptr);
  };
  const cuda::CrossEntropyShape chosen = cuda::softmax_cross_entropy_shape(args(0, -1, 0, 0));
  b.row(m.name,
        "softmax cross-entropy (" + std::to_string(chosen.block_threads) + " threads, " +
            std::to_string(chosen.cluster_blocks) + " a cluster" +
            (chosen.copy_engine == 1 ? ", bulk copies" : "") +
            (chosen.tail_in_registers == 1 ? ", register tail)" : ")"),
        bytes, [&](int i) { kernel(i, -1, 0, 0); });
  // The same launch without the register tail (the unheld end read twice, §49's kernel).
  if (chosen.tail_in_registers == 1)
    b.row(
        m.name, "softmax cross-entropy, no register tail", bytes,
        [&](int i) {
          cuda::CrossEntropyArgs a = args(i, -1, 0, 0);
          a.tail_in_registers = 0;
          cuda::softmax_cross_entropy(a, nullptr);
        },
        true);
  // The same launch with each thread loading what it holds (§48's kernel), where bulk copies
  // are the default.
  if (chosen.copy_engine == 1)
    b.row(
        m.name, "softmax cross-entropy, the threads' own loads", bytes,
        [&](int i) { kernel(i, -1, 0, 0, 0); }, true);
  // The default launch with the held part in one piece, four, or sixteen (the default is two).
  if (chosen.copy_engine == 1)
    for (const int chunks : {1, 4, 16})
      b.row(
          m.name, "softmax cross-entropy, bulk copies in " + std::to_string(chunks) + " chunks",
          bytes,
          [&, chunks](int i) {
            cuda::CrossEntropyArgs a = args(i, -1, 0, 0);
            a.copy_chunks = chunks;
            cuda::softmax_cross_entropy(a, nullptr);
          },
          true);
  // Each block size, one block a row and two (a cluster): a row or half held whole where it fits
  // the block's share of shared memory, else in part; each by the threads' loads and, where the
  // device has them, by bulk copies.
  for (const int engine : {0, 1})
    for (const int threads : {128, 256, 512})
      for (const int cluster : {1, 2})
        if (engine == 0 || chosen.copy_engine == 1)
          b.row(
              m.name,
              "softmax cross-entropy, " + std::to_string(threads) + " threads a block, " +
                  std::to_string(cluster) + " a cluster" + (engine == 1 ? ", bulk copies" : ""),
              bytes, [&](int i) { kernel(i, -1, threads, cluster, engine); }, true);
  b.row(
      m.name, "softmax cross-entropy, row read twice", bytes, [&](int i) { kernel(i, 0, 0, 0); },
      true);
  const at::Tensor grad = torch::empty({tokens, vocab}, kBf16);
  b.row(
      m.name, "cross-entropy, ATen ops by chunk", bytes,
      [&](int i) {
        for (int64_t start = 0; start < tokens; start += kernels::kLossChunkTokens) {
          const int64_t rows = std::min(kernels::kLossChunkTokens, tokens - start);
          const auto chunk = kernels::reference::softmax_cross_entropy(
              logits[i].narrow(0, start, rows), targets.narrow(0, start, rows), tokens);
          grad.narrow(0, start, rows).copy_(chunk.grad);
        }
      },
      true);
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "fused_ops_bench: no CUDA device\n");
    return 1;
  }
  Bench b;
  const int64_t tokens = int_flag(argc, argv, "--tokens", 4096);
  b.samples = std::max(1, int_flag(argc, argv, "--samples", 30));
  b.batch = std::max(1, int_flag(argc, argv, "--batch", 20));
  std::vector<const workloads::ModelConfig*> models;
  for (const std::string& name :
       split_names(string_flag(argc, argv, "--models", "llama2-7b,qwen3-8b"))) {
    const auto& zoo = workloads::model_zoo();
    const auto found = std::find_if(
        zoo.begin(), zoo.end(), [&](const workloads::ModelConfig& m) { return m.name == name; });
    if (found == zoo.end() || found->is_moe()) {
      std::fprintf(stderr, "fused_ops_bench: --models takes dense built-in models, not '%s'\n",
                   name.c_str());
      return 2;
    }
    models.push_back(&*found);
  }
  if (tokens <= 0 || models.empty()) {
    std::fprintf(stderr, "fused_ops_bench: --tokens must be positive and --models not empty\n");
    return 2;
  }

  int device = 0, clock_khz = 0, bus_bits = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  cudaDeviceProp prop{};
  LPBENCH_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  b.peak_gbs = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;

  const int64_t copy_bytes = int64_t{1} << 30;
  const at::Tensor src = torch::empty({copy_bytes}, kCuda.dtype(at::kByte));
  const at::Tensor dst = torch::empty({copy_bytes}, kCuda.dtype(at::kByte));
  const Timing copy = time_ms(
      [&](int) {
        LPBENCH_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), copy_bytes,
                                           cudaMemcpyDeviceToDevice, nullptr));
      },
      1, b.samples);
  b.copy_gbs = 2.0 * copy_bytes / copy.median / 1e6;
  std::printf(
      "%s: HBM peak %.0f GB/s (memory clock %d MHz, %d-bit bus); a 1 GiB copy %.0f GB/s "
      "(%.0f%% of peak); %lld tokens, %d samples of %d calls\n",
      prop.name, b.peak_gbs, clock_khz / 1000, bus_bits, b.copy_gbs,
      100.0 * b.copy_gbs / b.peak_gbs, static_cast<long long>(tokens), b.samples, b.batch);
  // "of copy": of the 1 GiB copy's rate; "same-size copy": a copy moving the row's bytes, and
  // the kernel's share of its rate.
  std::printf("%-10s %-34s %8s %8s %15s %7s %7s %7s %7s %7s\n", "model", "kernel", "MB", "ms",
              "(p10-p90)", "GB/s", "of HBM", "of copy", "same-size copy", "of it");
  for (const workloads::ModelConfig* m : models) {
    norms(b, *m, tokens);
    swiglu(b, *m, tokens);
    producers_quantize(b, *m, tokens);
    weights_quantize(b, *m);
    attention_side(b, *m, tokens);
    rope_backward_quantize(b, *m, tokens);
    output_loss(b, *m, tokens);
  }
  std::printf("lowest: %.0f%% of the HBM peak (%s)\n", b.worst, b.worst_row.c_str());
  return 0;
}
