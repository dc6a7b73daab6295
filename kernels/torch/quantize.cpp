#include "kernels/torch/quantize.h"

#include <c10/core/StorageImpl.h>
#include <c10/util/bit_cast.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "kernels/cuda/rope_backward_tile.h"
#include "kernels/torch/rounding_seed.h"

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAStream.h>
#include "kernels/torch/cuda_types.h"

#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/quantize_row_pair.cuh"
#include "kernels/cuda/quantize_tensorwise.cuh"
#include "kernels/torch/amax_registry.h"
#include "kernels/torch/quantization_batch.h"
#endif

namespace lpbench::kernels {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

void check_history(const QuantSpec& spec, const AmaxHistory* history) {
  TORCH_CHECK(history == nullptr || (spec.block_rows == 0 && spec.block_cols == 0),
              "quantize: an amax history (delayed scaling) is for tensorwise scales only");
  TORCH_CHECK(history == nullptr || spec.rounding == Rounding::nearest,
              "quantize: delayed scaling rounds to nearest (no stochastic rounding)");
}

// The seed of this quantization's stochastic rounding (0 where it rounds to nearest).
uint64_t seed_for(const QuantSpec& spec) {
  return spec.rounding == Rounding::stochastic ? next_rounding_seed() : 0;
}

// The reference's delayed scaling: x (as quantized) by the history's amax, then x's own amax
// into the history.
Quantized reference_delayed(const at::Tensor& x, const QuantSpec& spec, AmaxHistory& history) {
  const AmaxHistory::Turn turn = history.take_turn(x);
  Quantized q = turn.first
                    ? reference::quantize(x, spec)
                    : reference::quantize_by_amax(
                          x, spec.format,
                          c10::bit_cast<float>(AmaxHistory::scaling_amax(turn).item<int32_t>()));
  const float own = reference::block_absmax(x, x.size(0), x.size(1)).item<float>();
  AmaxHistory::record(turn, c10::bit_cast<int32_t>(own) & 0x7fffffff);
  return q;
}

std::atomic<bool> g_producer_quantization{true};

// Producers' quantizations waiting for their consumer (remember_quantization). A consumer takes
// its entry in the same forward (or backward, for a dY), right after the producer: a few entries
// are ever waiting (one each where a pass stops between the two), and the oldest go past
// kWaiting.
struct Waiting {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  const c10::StorageImpl* key = nullptr;
  int64_t offset = 0;
  int64_t numel = 0;
  const AmaxHistory* history = nullptr;
  Quantized q;
  Quantized t;
};
constexpr size_t kWaiting = 8;
std::mutex g_waiting_mutex;
std::deque<Waiting> g_waiting;

// The producer's quantization of x under `history` and `spec`, taken (forgotten) where there is
// one.
std::optional<Waiting> take_waiting(const at::Tensor& x, const AmaxHistory* history,
                                    const QuantSpec& spec) {
  if (!x.has_storage()) return std::nullopt;
  const c10::StorageImpl* key = x.storage().unsafeGetStorageImpl();
  const std::lock_guard<std::mutex> lock(g_waiting_mutex);
  for (auto it = g_waiting.begin(); it != g_waiting.end(); ++it) {
    if (it->key != key || it->offset != x.storage_offset() || it->numel != x.numel() ||
        it->history != history || !(it->q.spec == spec)) {
      continue;
    }
    // A storage freed since, whose address a new one took, is not x's.
    const bool alive = it->storage.lock().get() == key;
    std::optional<Waiting> found;
    if (alive) found = std::move(*it);
    g_waiting.erase(it);
    return found;
  }
  return std::nullopt;
}

#ifdef LPBENCH_CUDA_GLUE
// The kernel's arguments for quantizing in `turn` of a history: its ring, which slot records, and
// whether the history's amax scales (every turn but its first).
void take_turn_in(cuda::QuantizeArgs& args, const AmaxHistory::Turn& turn) {
  args.history = reinterpret_cast<uint32_t*>(turn.ring.data_ptr<int32_t>());
  args.history_slots = turn.slots();
  args.history_current = turn.current;
  args.delayed = !turn.first;
}

// The quantization of `input` (transposed with `transpose`) into fresh tensors, and with
// `with_transpose` the transposed copy too (first: as asked; second: its transpose).
// `rowwise_copy` (spec {1,0}): the copy is xᵀ quantized per row of xᵀ instead.
std::pair<Quantized, std::optional<Quantized>> quantize_cuda(const at::Tensor& x,
                                                             const QuantSpec& spec, bool transpose,
                                                             bool with_transpose,
                                                             AmaxHistory* history, uint64_t seed,
                                                             bool rowwise_copy = false) {
  // Its producer quantized it already (x's values were never written): both layouts, of which
  // a transposed call (never also with_transpose) takes the second.
  if (!rowwise_copy) {
    if (std::optional<Waiting> done = take_waiting(x, history, spec)) {
      if (transpose) return {std::move(done->t), std::nullopt};
      std::optional<Quantized> t;
      if (with_transpose) t = std::move(done->t);
      return {std::move(done->q), std::move(t)};
    }
  }
  // A producer's stand-in (quantized_stand_in) holds none of its values: quantizing it would
  // quantize whatever its one unwritten element holds.
  TORCH_CHECK(!is_quantized_stand_in(x),
              "quantize: x stands in for a producer's output whose quantization was written in "
              "its place, but none under this history and spec was waiting for it");
  // Delayed scaling scales by the history's amax, which the quantizing pass finds in the ring;
  // otherwise a tensorwise scale whose amax the kernel that wrote x already reported needs no
  // amax pass either.
  std::optional<AmaxHistory::Turn> turn;
  if (history != nullptr) {
    turn = history->take_turn(
        x, c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None);
  }
  const std::optional<at::Tensor> amax =
      !turn && spec.block_rows == 0 && spec.block_cols == 0 ? recall_amax(x) : std::nullopt;
  // Rowwise both ways: each row's and column's amax, where the kernel that wrote x reported them.
  const std::optional<at::Tensor> lines =
      rowwise_copy && !transpose ? recall_line_amax(x, x.size(1)) : std::nullopt;
  at::Tensor input = x;
  if (input.stride(1) != 1) input = input.contiguous();
  TORCH_CHECK(input.scalar_type() == at::kBFloat16 || input.scalar_type() == at::kFloat,
              "quantize: BF16 or FP32 input, got ", input.scalar_type());
  const int64_t out_rows = transpose ? input.size(1) : input.size(0);
  const int64_t out_cols = transpose ? input.size(0) : input.size(1);
  const int64_t br = spec.block_rows > 0 ? std::min(spec.block_rows, out_rows) : out_rows;
  const int64_t bc = spec.block_cols > 0 ? std::min(spec.block_cols, out_cols) : out_cols;
  const auto values_options = input.options().dtype(reference::storage_type(spec.format));
  const auto scales_options = input.options().dtype(at::kFloat);
  Quantized q{at::empty({out_rows, out_cols}, values_options),
              at::empty({ceil_div(out_rows, br), ceil_div(out_cols, bc)}, scales_options), spec};
  std::optional<Quantized> t;
  if (with_transpose) {
    t = Quantized{at::empty({out_cols, out_rows}, values_options),
                  rowwise_copy
                      ? at::empty({out_cols, 1}, scales_options)
                      : at::empty({ceil_div(out_cols, bc), ceil_div(out_rows, br)}, scales_options),
                  spec};
  }
  cuda::QuantizeArgs args;
  args.x = input.data_ptr();
  args.x_type = input.scalar_type() == at::kBFloat16 ? cuda::DType::bf16 : cuda::DType::fp32;
  args.rows = input.size(0);
  args.cols = input.size(1);
  args.ld = input.stride(0);
  args.transpose = transpose;
  args.out_type = cuda_type(spec.format, "quantize");
  args.block_rows = spec.block_rows;
  args.block_cols = spec.block_cols;
  args.values = q.values.data_ptr();
  args.scales = q.scales.data_ptr<float>();
  if (t) {
    args.values_t = t->values.data_ptr();
    args.scales_t = t->scales.data_ptr<float>();
    args.copy_rowwise = rowwise_copy;
  }
  if (amax) args.amax = reinterpret_cast<const uint32_t*>(amax->data_ptr<int32_t>());
  if (lines) args.line_amax = reinterpret_cast<const uint32_t*>(lines->data_ptr<int32_t>());
  args.stochastic = spec.rounding == Rounding::stochastic;
  args.seed = seed;
  if (turn) take_turn_in(args, *turn);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(input.device().index()).stream();
  // By an amax known already, inside a QuantizationBatch: gathered, to be launched with the rest.
  QuantizationBatch* const batch = QuantizationBatch::open();
  if (batch != nullptr && amax && cuda::tensorwise_batch_takes(args)) {
    std::vector<at::Tensor> alive{input, *amax, q.values, q.scales};
    if (t) alive.insert(alive.end(), {t->values, t->scales});
    batch->gather(args, stream, std::move(alive));
    return {std::move(q), std::move(t)};
  }
  const size_t scratch = cuda::quantize_workspace_bytes(args);
  at::Tensor workspace;
  if (!amax && !turn && scratch == sizeof(int32_t)) {
    // A one-word workspace is a tensorwise amax: its pass folds into a producer's slot, zeroed
    // with 63 others in one launch, rather than into a word it would first clear with a memset
    // launch of its own.
    workspace = new_amax(input);
    args.workspace = workspace.data_ptr();
    args.workspace_zeroed = true;
  } else if (!lines && args.copy_rowwise && cuda::row_pair_kernel_applies(args)) {
    // The row pair's amax pass folds every row's and column's amax into a zeroed range of the
    // producers' arena, likewise, rather than into a workspace it would first clear.
    workspace = new_line_amax(input, args.rows, args.cols);
    args.workspace = workspace.data_ptr();
    args.workspace_zeroed = true;
  } else if (scratch > 0) {
    workspace = at::empty({static_cast<int64_t>(scratch)}, input.options().dtype(at::kByte));
    args.workspace = workspace.data_ptr();
  }
  cuda::quantize(args, stream);
  return {std::move(q), std::move(t)};
}
#endif

}  // namespace

Quantized quantize(const at::Tensor& x, const QuantSpec& spec, bool transpose,
                   AmaxHistory* history) {
  TORCH_CHECK(x.dim() == 2, "quantize takes a 2-D tensor, got ", x.sizes());
  check_history(spec, history);
  const uint64_t seed = seed_for(spec);
#ifdef LPBENCH_CUDA_GLUE
  if (x.is_cuda()) return quantize_cuda(x, spec, transpose, false, history, seed).first;
#endif
  if (history != nullptr) return reference_delayed(transpose ? x.t() : x, spec, *history);
  return reference::quantize(transpose ? x.t() : x, spec, seed);
}

bool is_rowwise(const QuantSpec& spec) {
  return spec.block_rows == 1 && spec.block_cols == 0;
}

std::pair<Quantized, Quantized> quantize_rowwise_pair(const at::Tensor& x, const QuantSpec& spec) {
  TORCH_CHECK(x.dim() == 2, "quantize takes a 2-D tensor, got ", x.sizes());
  TORCH_CHECK(is_rowwise(spec), "quantize_rowwise_pair: the spec must be rowwise {1,0}, got {",
              spec.block_rows, ",", spec.block_cols, "}");
  TORCH_CHECK(spec.rounding == Rounding::nearest,
              "quantize_rowwise_pair: round to nearest only (stochastic rounding draws a seed "
              "per layout: quantize each)");
#ifdef LPBENCH_CUDA_GLUE
  if (x.is_cuda()) {
    auto [q, t] = quantize_cuda(x, spec, false, true, nullptr, 0, /*rowwise_copy=*/true);
    return {std::move(q), std::move(*t)};
  }
#endif
  return {reference::quantize(x, spec), reference::quantize(x.t(), spec)};
}

bool transposes_exactly(const QuantSpec& spec) {
  return spec.block_rows == spec.block_cols;
}

std::pair<Quantized, Quantized> quantize_with_transpose(const at::Tensor& x, const QuantSpec& spec,
                                                        AmaxHistory* history) {
  TORCH_CHECK(x.dim() == 2, "quantize takes a 2-D tensor, got ", x.sizes());
  check_history(spec, history);
  TORCH_CHECK(transposes_exactly(spec), "quantize_with_transpose: blocks of ", spec.block_rows, "x",
              spec.block_cols, " do not transpose exactly; quantize each layout instead");
  const uint64_t seed = seed_for(spec);
#ifdef LPBENCH_CUDA_GLUE
  if (x.is_cuda()) {
    auto [q, t] = quantize_cuda(x, spec, false, true, history, seed);
    return {std::move(q), std::move(*t)};
  }
#endif
  Quantized q = history != nullptr ? reference_delayed(x, spec, *history)
                                   : reference::quantize(x, spec, seed);
  Quantized t = reference::transpose(q);
  return {std::move(q), std::move(t)};
}

#ifdef LPBENCH_CUDA_GLUE
namespace {

// Whether `input`'s scale is known before the values are, for a producer to quantize as it
// computes them: a history that has recorded (its first turn scales by the output's own amax), or
// the output's own amax, tensorwise and rounding to nearest into a narrow format.
bool scale_known_ahead(const InputQuantization& input) {
  const QuantSpec& spec = input.spec;
  const bool scaled = input.history != nullptr ? input.history->recorded() > 0 : input.own_amax;
  return scaled && spec.block_rows == 0 && spec.block_cols == 0 &&
         spec.rounding == Rounding::nearest && spec.format != NumberFormat::bf16;
}
// Whether a producer may write `input`'s quantization of its output, computed from `source`
// (contiguous BF16 on the GPU).
bool producer_may_quantize(const at::Tensor& source, const InputQuantization& input) {
  return scale_known_ahead(input) && source.is_cuda() && source.scalar_type() == at::kBFloat16 &&
         source.dim() >= 2 && source.is_contiguous();
}

// The kernel's arguments for the producer's output X [rows, cols], computed from `source` (rows
// `ld` elements apart); its outputs not yet given.
cuda::QuantizeArgs producer_args(const at::Tensor& source, int64_t rows, int64_t cols, int64_t ld,
                                 const QuantSpec& spec) {
  cuda::QuantizeArgs args;
  args.x = source.data_ptr();
  args.x_type = cuda::DType::bf16;
  args.rows = rows;
  args.cols = cols;
  args.ld = ld;
  args.out_type = cuda_type(spec.format, "quantize");
  return args;
}

// X and Xᵀ quantized by `launch` (the producer's kernel) into fresh tensors: in the history's
// next turn, or scaled by `amax` (X's own, as FP32 bits) under input.own_amax.
template <typename Launch>
std::pair<Quantized, Quantized> quantize_in_producer(const at::Tensor& source,
                                                     cuda::QuantizeArgs& args,
                                                     const InputQuantization& input,
                                                     const at::Tensor& amax, Launch launch) {
  std::optional<AmaxHistory::Turn> turn;
  if (input.history != nullptr) {
    turn = input.history->take_turn(source, c10::cuda::currentStreamCaptureStatusMayInitCtx() !=
                                                c10::cuda::CaptureStatus::None);
  } else {
    TORCH_CHECK(amax.defined() && amax.device() == source.device() &&
                    amax.scalar_type() == at::kInt && amax.numel() == 1,
                "quantize_in_producer: a current scale needs X's amax (int32 [1] on X's device)");
    args.amax = reinterpret_cast<const uint32_t*>(amax.data_ptr<int32_t>());
  }
  const auto values_options = source.options().dtype(reference::storage_type(input.spec.format));
  const auto scales_options = source.options().dtype(at::kFloat);
  Quantized q{at::empty({args.rows, args.cols}, values_options), at::empty({1, 1}, scales_options),
              input.spec};
  Quantized t{at::empty({args.cols, args.rows}, values_options), at::empty({1, 1}, scales_options),
              input.spec};
  args.values = q.values.data_ptr();
  args.scales = q.scales.data_ptr<float>();
  args.values_t = t.values.data_ptr();
  args.scales_t = t.scales.data_ptr<float>();
  // Not a first turn: producer_may_quantize saw the history record.
  if (turn) take_turn_in(args, *turn);
  launch(args, c10::cuda::getCurrentCUDAStream(source.device().index()).stream());
  return {std::move(q), std::move(t)};
}

// Whether the norm's kernel takes h [..., cols] and the weight (rstd is the glue's own).
bool rmsnorm_kernel_takes(const at::Tensor& h, const at::Tensor& weight,
                          const InputQuantization& input) {
  if (!producer_may_quantize(h, input) || weight.device() != h.device() ||
      weight.scalar_type() != at::kFloat || !weight.is_contiguous() ||
      weight.numel() != h.size(-1)) {
    return false;
  }
  const int64_t cols = h.size(-1);
  const cuda::QuantizeArgs args = producer_args(h, h.numel() / cols, cols, cols, input.spec);
  return cuda::rmsnorm_tensorwise_applies(args, weight.data_ptr<float>());
}

// Whether the tile kernel takes gate_up [..., 2·inner] and d_out [..., inner] for SwiGLU's
// gradient.
bool swiglu_backward_kernel_takes(const at::Tensor& gate_up, const at::Tensor& d_out,
                                  const InputQuantization& input) {
  if (input.history == nullptr || !producer_may_quantize(gate_up, input) ||
      !d_out.is_contiguous() || d_out.scalar_type() != at::kBFloat16 ||
      d_out.device() != gate_up.device() || d_out.numel() * 2 != gate_up.numel()) {
    return false;
  }
  const int64_t cols = gate_up.size(-1);
  const cuda::QuantizeArgs args =
      producer_args(gate_up, gate_up.numel() / cols, cols, cols, input.spec);
  return cuda::swiglu_backward_tensorwise_applies(args);
}

}  // namespace
#endif

std::optional<std::pair<Quantized, Quantized>> quantize_swiglu_backward_with_transpose(
    const at::Tensor& gate_up, const at::Tensor& d_out, const InputQuantization& input) {
#ifdef LPBENCH_CUDA_GLUE
  if (!swiglu_backward_kernel_takes(gate_up, d_out, input)) return std::nullopt;
  const int64_t cols = gate_up.size(-1);
  cuda::QuantizeArgs args = producer_args(gate_up, gate_up.numel() / cols, cols, cols, input.spec);
  const void* d = d_out.data_ptr();
  return quantize_in_producer(gate_up, args, input, {},
                              [d](const cuda::QuantizeArgs& a, cudaStream_t stream) {
                                cuda::quantize_swiglu_backward_tensorwise(a, d, stream);
                              });
#else
  (void)gate_up;
  (void)d_out;
  (void)input;
  return std::nullopt;
#endif
}

std::optional<std::pair<Quantized, Quantized>> quantize_swiglu_with_transpose(
    const at::Tensor& gate_up, const InputQuantization& input) {
#ifdef LPBENCH_CUDA_GLUE
  if (input.history == nullptr || !producer_may_quantize(gate_up, input)) return std::nullopt;
  const int64_t inner = gate_up.size(-1) / 2;
  cuda::QuantizeArgs args =
      producer_args(gate_up, gate_up.numel() / gate_up.size(-1), inner, 2 * inner, input.spec);
  if (!cuda::swiglu_tensorwise_applies(args)) return std::nullopt;
  return quantize_in_producer(gate_up, args, input, {}, cuda::quantize_swiglu_tensorwise);
#else
  (void)gate_up;
  (void)input;
  return std::nullopt;
#endif
}

bool rope_backward_quantization_takes(int64_t head_dim, int64_t q_heads, int64_t kv_heads,
                                      int64_t seq) {
  return cuda::rope_backward_tile_takes(head_dim, q_heads, kv_heads, kv_heads, seq);
}

#ifdef LPBENCH_CUDA_GLUE
namespace {

// The tile kernel's arguments for RoPE's backward's dY [rows, cols], read from dQ's parts.
cuda::QuantizeArgs rope_backward_args(const cuda::RopeArgs (&parts)[3], const at::Tensor& like,
                                      int64_t rows, int64_t cols, const QuantSpec& spec) {
  cuda::QuantizeArgs args = producer_args(like, rows, cols, cols, spec);
  args.x = parts[0].in;
  return args;
}

}  // namespace

bool rope_backward_quantization_applies(const cuda::RopeArgs (&parts)[3], const at::Tensor& like,
                                        int64_t rows, int64_t cols,
                                        const InputQuantization& input) {
  return input.history != nullptr && scale_known_ahead(input) && like.is_cuda() &&
         like.scalar_type() == at::kBFloat16 &&
         cuda::rope_backward_tensorwise_applies(
             rope_backward_args(parts, like, rows, cols, input.spec), parts);
}

std::optional<std::pair<Quantized, Quantized>> quantize_rope_backward_with_transpose(
    const cuda::RopeArgs (&parts)[3], const at::Tensor& like, int64_t rows, int64_t cols,
    const InputQuantization& input) {
  if (!rope_backward_quantization_applies(parts, like, rows, cols, input)) return std::nullopt;
  cuda::QuantizeArgs args = rope_backward_args(parts, like, rows, cols, input.spec);
  return quantize_in_producer(like, args, input, {},
                              [&parts](const cuda::QuantizeArgs& a, cudaStream_t stream) {
                                cuda::quantize_rope_backward_tensorwise(a, parts, stream);
                              });
}
#endif

bool rmsnorm_quantization_applies(const at::Tensor& h, const at::Tensor& weight,
                                  const InputQuantization& input) {
#ifdef LPBENCH_CUDA_GLUE
  return h.defined() && rmsnorm_kernel_takes(h, weight, input);
#else
  (void)h;
  (void)weight;
  (void)input;
  return false;
#endif
}

std::optional<std::pair<Quantized, Quantized>> quantize_rmsnorm_with_transpose(
    const at::Tensor& h, const at::Tensor& rstd, const at::Tensor& weight,
    const InputQuantization& input, const at::Tensor& amax) {
#ifdef LPBENCH_CUDA_GLUE
  if (!rmsnorm_kernel_takes(h, weight, input) || rstd.device() != h.device() ||
      rstd.scalar_type() != at::kFloat || !rstd.is_contiguous() ||
      rstd.numel() != h.numel() / h.size(-1)) {
    return std::nullopt;
  }
  const int64_t cols = h.size(-1);
  cuda::QuantizeArgs args = producer_args(h, h.numel() / cols, cols, cols, input.spec);
  const float* r = rstd.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  return quantize_in_producer(h, args, input, amax,
                              [r, w](const cuda::QuantizeArgs& a, cudaStream_t stream) {
                                cuda::quantize_rmsnorm_tensorwise(a, r, w, stream);
                              });
#else
  (void)h;
  (void)rstd;
  (void)weight;
  (void)input;
  (void)amax;
  return std::nullopt;
#endif
}

std::vector<int64_t> to_saved(const InputQuantization& q) {
  TORCH_CHECK(q.history != nullptr && !q.own_amax, "to_saved: a history's quantization only");
  return {reinterpret_cast<int64_t>(q.history), static_cast<int64_t>(q.spec.format),
          q.spec.block_rows, q.spec.block_cols, static_cast<int64_t>(q.spec.rounding)};
}

InputQuantization from_saved(const std::vector<int64_t>& v) {
  TORCH_CHECK(v.size() == 5, "from_saved: not an InputQuantization's saved form");
  return {reinterpret_cast<AmaxHistory*>(v[0]),
          {static_cast<NumberFormat>(v[1]), v[2], v[3], static_cast<Rounding>(v[4])}};
}

at::Tensor quantized_stand_in(at::IntArrayRef sizes, const at::TensorOptions& options) {
  const at::Tensor one = at::empty({1}, options);
  at::Tensor out = at::empty({0}, options);
  out.set_(one.storage(), 0, sizes, std::vector<int64_t>(sizes.size(), 0));
  return out;
}

bool is_quantized_stand_in(const at::Tensor& x) {
  return x.numel() > 1 && x.has_storage() &&
         x.storage().nbytes() < static_cast<size_t>(x.numel()) * x.itemsize();
}

void remember_quantization(const at::Tensor& x, const InputQuantization& input, Quantized q,
                           Quantized t) {
  TORCH_CHECK(x.has_storage() && input.any(),
              "remember_quantization: a tensor with storage, and a history or its own amax");
  Waiting w{x.storage().getWeakStorageImpl(),
            x.storage().unsafeGetStorageImpl(),
            x.storage_offset(),
            x.numel(),
            input.history,
            std::move(q),
            std::move(t)};
  const std::lock_guard<std::mutex> lock(g_waiting_mutex);
  g_waiting.push_back(std::move(w));
  while (g_waiting.size() > kWaiting)
    g_waiting.pop_front();
}

void set_producer_quantization(bool enabled) {
  g_producer_quantization.store(enabled);
}

bool producer_quantization() {
  return g_producer_quantization.load();
}

}  // namespace lpbench::kernels
