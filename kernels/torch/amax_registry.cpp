#include "kernels/torch/amax_registry.h"

#include <c10/core/StorageImpl.h>

#ifdef LPBENCH_CUDA_GLUE
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lpbench::kernels {

namespace {

struct Entry {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  int64_t offset = 0;
  int64_t numel = 0;
  uint32_t version = 0;
  at::Tensor amax;
  int64_t line_cols = 0;  // 0: the tensor's amax; else each row's and column's, rows this wide
};

// Entries by the address of their storage (a dead storage's entry never matches: its weak
// pointer no longer locks), evicted oldest first past kCapacity: a step remembers an amax for
// every weight copy the optimizer writes (a few hundred) and a few for each layer's producers.
constexpr size_t kCapacity = 4096;

std::mutex g_mutex;
std::unordered_map<const c10::StorageImpl*, std::vector<Entry>> g_entries;
std::deque<const c10::StorageImpl*> g_order;  // one key an entry, oldest first

uint32_t version_of(const at::Tensor& t) {
  return t.unsafeGetTensorImpl()->version_counter().current_version();
}

void remember(const at::Tensor& tensor, const at::Tensor& amax_bits, int64_t line_cols) {
  const c10::StorageImpl* key = tensor.storage().unsafeGetStorageImpl();
  Entry e{tensor.storage().getWeakStorageImpl(),
          tensor.storage_offset(),
          tensor.numel(),
          version_of(tensor),
          amax_bits,
          line_cols};
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Entry>& same_storage = g_entries[key];
  for (Entry& old : same_storage) {
    // The same elements again (the next step's copy): the new amax replaces the old one.
    if (old.offset == e.offset && old.numel == e.numel) {
      old = std::move(e);
      return;
    }
  }
  same_storage.push_back(std::move(e));
  g_order.push_back(key);
  while (g_order.size() > kCapacity) {
    const auto it = g_entries.find(g_order.front());
    g_order.pop_front();
    if (it == g_entries.end()) continue;
    it->second.erase(it->second.begin());
    if (it->second.empty()) g_entries.erase(it);
  }
}

std::optional<at::Tensor> recall(const at::Tensor& tensor, int64_t line_cols) {
  const c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_entries.find(storage);
  if (it == g_entries.end()) return std::nullopt;
  for (const Entry& e : it->second) {
    if (e.offset != tensor.storage_offset() || e.numel != tensor.numel()) continue;
    // A storage freed since, whose address a new one took, is not this tensor's.
    if (e.storage.lock().get() != storage) return std::nullopt;
    if (e.version != version_of(tensor) || e.line_cols != line_cols) return std::nullopt;
    return e.amax;
  }
  return std::nullopt;
}

#ifdef LPBENCH_CUDA_GLUE
// Producers' amaxes on a GPU, taken from blocks of kArenaWords words zeroed in one fill launch
// each, where each amax took its own fill (a launch and its gap, ~2.5 µs; int8-tensor's layer
// step took eight, and dy=row's producers' lines three more). A block holds several steps'
// amaxes and lines (a llama2-7b layer's lines are 42 K words a step). Each range is handed out
// once, 16-byte aligned, and a block lives while any of its ranges is referenced, so no range
// is zeroed or reused under a reader. A block serves the device and stream it was zeroed on, and
// only eagerly: a range zeroed before a CUDA graph's capture would not be zeroed again by the
// replays, so under capture every amax gets its own fill, recorded in the graph.
constexpr int64_t kArenaWords = int64_t{1} << 18;  // 1 MiB
constexpr int64_t kArenaAlign = 4;                 // words: 16 bytes

struct AmaxArena {
  at::Tensor words;
  int64_t next = 0;
  c10::StreamId stream = 0;
};

std::optional<at::Tensor> arena_words(const at::Tensor& like, int64_t count) {
  if (!like.is_cuda() ||
      c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None) {
    return std::nullopt;
  }
  thread_local AmaxArena arena;
  const c10::StreamId stream = c10::cuda::getCurrentCUDAStream(like.device().index()).id();
  const int64_t taken = (count + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  if (!arena.words.defined() || arena.next + taken > arena.words.numel() ||
      arena.words.device() != like.device() || arena.stream != stream) {
    arena.words = at::zeros({std::max(kArenaWords, taken)}, like.options().dtype(at::kInt));
    arena.next = 0;
    arena.stream = stream;
  }
  at::Tensor range = arena.words.narrow(0, arena.next, count);
  arena.next += taken;
  return range;
}
#endif

}  // namespace

at::Tensor new_amax(const at::Tensor& like) {
#ifdef LPBENCH_CUDA_GLUE
  if (std::optional<at::Tensor> slot = arena_words(like, 1)) return *std::move(slot);
#endif
  return at::zeros({1}, like.options().dtype(at::kInt));
}

at::Tensor new_line_amax(const at::Tensor& like, int64_t rows, int64_t cols) {
#ifdef LPBENCH_CUDA_GLUE
  if (std::optional<at::Tensor> lines = arena_words(like, rows + cols)) {
    return *std::move(lines);
  }
#endif
  return at::zeros({rows + cols}, like.options().dtype(at::kInt));
}

void fold_amax(const at::Tensor& amax_bits, const at::Tensor& written) {
  // |x| as FP32 bits, the sign bit cleared, compared as integers (a NaN above +Inf), as the
  // kernels' atomics compare them (amax.cuh); a float max would not rank a NaN.
  const at::Tensor mine =
      written.to(at::kFloat).contiguous().view(at::kInt).bitwise_and(0x7fffffff).max().reshape({1});
  amax_bits.copy_(at::maximum(amax_bits, mine));
}

void remember_amax(const at::Tensor& tensor, const at::Tensor& amax_bits) {
  if (tensor.is_non_overlapping_and_dense()) remember(tensor, amax_bits, 0);
}

void forget_amax(const at::Tensor& tensor, const at::Tensor& amax_bits) {
  if (!tensor.has_storage()) return;
  const c10::StorageImpl* key = tensor.storage().unsafeGetStorageImpl();
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_entries.find(key);
  if (it == g_entries.end()) return;
  std::vector<Entry>& same_storage = it->second;
  for (auto e = same_storage.begin(); e != same_storage.end(); ++e) {
    if (e->offset != tensor.storage_offset() || e->numel != tensor.numel() || e->line_cols != 0 ||
        !e->amax.is_same(amax_bits)) {
      continue;
    }
    same_storage.erase(e);
    // Its key in g_order goes too (the one nearest the back: entries are appended), so that
    // eviction keeps counting entries.
    const auto key_at = std::find(g_order.rbegin(), g_order.rend(), key);
    if (key_at != g_order.rend()) g_order.erase(std::next(key_at).base());
    if (same_storage.empty()) g_entries.erase(it);
    return;
  }
}

std::optional<at::Tensor> recall_amax(const at::Tensor& tensor) {
  if (!tensor.has_storage() || !tensor.is_non_overlapping_and_dense()) return std::nullopt;
  return recall(tensor, 0);
}

void remember_line_amax(const at::Tensor& tensor, const at::Tensor& line_bits, int64_t cols) {
  TORCH_CHECK(
      cols > 0 && tensor.numel() % cols == 0 && line_bits.numel() == tensor.numel() / cols + cols,
      "remember_line_amax: ", line_bits.numel(), " amaxes for ", tensor.numel(),
      " elements in rows of ", cols);
  if (tensor.is_contiguous()) remember(tensor, line_bits, cols);
}

std::optional<at::Tensor> recall_line_amax(const at::Tensor& tensor, int64_t cols) {
  if (!tensor.has_storage() || !tensor.is_contiguous() || cols <= 0) return std::nullopt;
  return recall(tensor, cols);
}

}  // namespace lpbench::kernels
