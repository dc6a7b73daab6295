#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <utility>
#include <vector>

#include "kernels/reference/quantize.h"
#include "kernels/torch/amax_history.h"

#ifdef LPBENCH_CUDA_GLUE
#include "kernels/cuda/rope.cuh"
#endif

namespace lpbench::kernels {

using reference::Quantized;
using reference::QuantSpec;

// x (2-D, BF16 or FP32) quantized on its own device with the numerics of
// kernels/reference/quantize.h. With `transpose`, xᵀ is quantized (fused on the GPU; the spec's
// blocks are in the transposed matrix's coordinates).
//
// With `history` (tensorwise only: delayed scaling), x is scaled by the history's amax
// (reference::quantize_by_amax) and its own amax goes into the history, found by the quantizing
// pass itself on the GPU; the first quantization of a history finds its own amax first.
Quantized quantize(const at::Tensor& x, const QuantSpec& spec, bool transpose = false,
                   AmaxHistory* history = nullptr);

// Whether quantizing x once gives xᵀ's quantization exactly: one scale per tensor, or square
// blocks (blocks map onto blocks, and clamping to the matrix is symmetric).
bool transposes_exactly(const QuantSpec& spec);

// x and xᵀ quantized under one spec that transposes exactly, equal to quantize(x, spec) and
// quantize(x, spec, true): one pass over x on the GPU (both layouts from each tile), an exact
// transpose of the quantization elsewhere. A training step reads each operand both ways.
std::pair<Quantized, Quantized> quantize_with_transpose(const at::Tensor& x, const QuantSpec& spec,
                                                        AmaxHistory* history = nullptr);

// Whether a spec is rowwise ({1,0}: one scale per row).
bool is_rowwise(const QuantSpec& spec);

// x per row and xᵀ per row of xᵀ (each column of x its own scale) under one rowwise spec that
// rounds to nearest, equal to quantize(x, spec) and quantize(x, spec, true): on the GPU one amax
// pass for both and one pass writing both (QuantizeArgs::copy_rowwise), where quantizing them apart
// reads x three times. A training step reads int8-row's and fp8-row's operands (and dY under
// dy=row) so.
std::pair<Quantized, Quantized> quantize_rowwise_pair(const at::Tensor& x, const QuantSpec& spec);

// How the consumer of a producer's output quantizes it, where a producer can quantize it in its
// place: tensorwise (`spec`, rounding to nearest), both layouts, scaled either by `history`
// (delayed scaling: the scale is known before the values are, so the producer can quantize as
// it computes them) or, with `own_amax`, by the output's own amax (current scaling: the producer
// finds the amax as it computes the output without writing it, and a second pass computes it
// again from the producer's input and quantizes it). Neither: the producer writes its output.
struct InputQuantization {
  AmaxHistory* history = nullptr;
  QuantSpec spec;
  bool own_amax = false;
  bool any() const { return history != nullptr || own_amax; }
};

// SwiGLU's output X = silu(gate) · up of gate_up [rows, 2·inner] quantized by `input` as one GPU
// kernel computes it (kernels/cuda/quantize_tensorwise.cuh): X and Xᵀ, the bits of
// quantize_with_transpose(swiglu(gate_up), input.spec, input.history), the history's turn taken.
// None where that kernel does not apply, taking no turn: off the GPU, shapes or spec it does not
// take, a history's first turn (scaled by X's own amax, which is known only after X is), and
// input.own_amax (an amax pass over gate/up, then X computed from them again, would move as many
// bytes as writing X and quantizing it: docs/perf-log.md §61).
std::optional<std::pair<Quantized, Quantized>> quantize_swiglu_with_transpose(
    const at::Tensor& gate_up, const InputQuantization& input);

// SwiGLU's gradient dY = d gate_up [rows, 2·inner] (kernels/torch/swiglu.h), the gate_up
// product's dY, quantized by `input` (how that product's backward quantizes its dY) as one GPU
// kernel computes it from gate_up and d_out [rows, inner], the gradient of SwiGLU's output: the
// bits of quantize_with_transpose(swiglu_backward(d_out, gate_up), input.spec, input.history),
// the history's turn taken. Under delayed scaling only, as for SwiGLU's output (by the gradient's
// own amax, an amax pass and this kernel took longer than the plain backward and the one-pass
// quantization: docs/perf-log.md §65). None where the kernel does not apply, taking no turn.
std::optional<std::pair<Quantized, Quantized>> quantize_swiglu_backward_with_transpose(
    const at::Tensor& gate_up, const at::Tensor& d_out, const InputQuantization& input);

// A norm's output X = h · rstd · weight (kernels/torch/rmsnorm.h) quantized by `input` as one
// GPU kernel computes it from h [..., cols], rstd (FP32, one a row) and the FP32 weight: the bits
// of quantize_with_transpose(rmsnorm's y, input.spec, input.history), the history's turn taken;
// under input.own_amax, scaled by `amax`, y's amax as FP32 bits (int32 [1] on h's device), which
// the norm's kernel found. None where the kernel does not apply, taking no turn, as for SwiGLU.
// The norm decides before its own kernel runs, since that kernel then writes h and rstd only:
// rmsnorm_quantization_applies says, from h and the weight, whether this will return a result.
bool rmsnorm_quantization_applies(const at::Tensor& h, const at::Tensor& weight,
                                  const InputQuantization& input);
std::optional<std::pair<Quantized, Quantized>> quantize_rmsnorm_with_transpose(
    const at::Tensor& h, const at::Tensor& rstd, const at::Tensor& weight,
    const InputQuantization& input, const at::Tensor& amax = {});

// Whether RoPE's backward quantization below takes these heads and sequences (what else it
// needs: BF16 on the GPU, delayed scaling, attention's dQ, dK and dV as SDPA gives them), for
// the workloads to say where it applies before any tensor exists.
bool rope_backward_quantization_takes(int64_t head_dim, int64_t q_heads, int64_t kv_heads,
                                      int64_t seq);

#ifdef LPBENCH_CUDA_GLUE
// RoPE's backward into the gradient dY [rows, cols] of the fused QKV product (attention.h), the
// QKV product's dY, quantized by `input` as one GPU kernel computes it from attention's dQ, dK
// and dV (`parts`, as cuda::rope_parts takes them, their outputs unused; `like` is dQ, on their
// device): the bits of quantize_with_transpose(that gradient, input.spec, input.history), the
// history's turn taken. Under delayed scaling only, as for SwiGLU's gradient (by the gradient's
// own amax, the pass that finds it and this kernel took as long as RoPE's backward writing the
// gradient and the one-pass quantization: docs/perf-log.md §66). None where the kernel does not
// apply, taking no turn: rope_backward_quantization_applies says so beforehand.
bool rope_backward_quantization_applies(const cuda::RopeArgs (&parts)[3], const at::Tensor& like,
                                        int64_t rows, int64_t cols, const InputQuantization& input);
std::optional<std::pair<Quantized, Quantized>> quantize_rope_backward_with_transpose(
    const cuda::RopeArgs (&parts)[3], const at::Tensor& like, int64_t rows, int64_t cols,
    const InputQuantization& input);
#endif

// An InputQuantization under a history carried through an autograd context's saved data (the
// history as an address): a backward that quantizes its gradient for the product before it
// (under delayed scaling only: SwiGLU's and RoPE's backwards).
std::vector<int64_t> to_saved(const InputQuantization& q);
InputQuantization from_saved(const std::vector<int64_t>& saved);

// What stands for a producer's output in autograd's graph where its consumer's quantization was
// written in its place (remember_quantization): the output's shape over one element's storage,
// every stride 0. That element is never written (zeroing it took a launch a step): nothing
// reads it. The consumer takes the quantization instead, and quantizing the stand-in itself
// fails (quantize_cuda).
at::Tensor quantized_stand_in(at::IntArrayRef sizes, const at::TensorOptions& options);

// Whether `x` is such a stand-in: its storage holds fewer bytes than its elements need.
bool is_quantized_stand_in(const at::Tensor& x);

// A producer's quantization of `x`, written in place of x's values (x stands for them in
// autograd's graph), kept until the consumer's quantization of x under the same history (none,
// under input.own_amax) and spec takes it (quantize and quantize_with_transpose, on the GPU),
// once: the consumer then quantizes nothing. Matched by x's storage, as the amax registry
// matches (amax_registry.h).
void remember_quantization(const at::Tensor& x, const InputQuantization& input, Quantized q,
                           Quantized t);

// Whether producers quantize their output in their consumer's place where they can (on by
// default): off, they write it and the consumer quantizes it, the same bits (the tests' twin).
void set_producer_quantization(bool enabled);
bool producer_quantization();

}  // namespace lpbench::kernels
