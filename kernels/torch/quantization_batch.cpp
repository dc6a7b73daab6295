#include "kernels/torch/quantization_batch.h"

#include <exception>
#include <utility>

#include "kernels/profiling/range.h"

#ifdef LPBENCH_CUDA_GLUE
#include "kernels/cuda/quantize_tensorwise.cuh"
#endif

namespace lpbench::kernels {

namespace {

thread_local QuantizationBatch* g_open = nullptr;

}  // namespace

struct QuantizationBatch::Pending {
#ifdef LPBENCH_CUDA_GLUE
  std::vector<cuda::QuantizeArgs> calls;
  std::vector<at::Tensor> alive;
  cudaStream_t stream = nullptr;
#endif
};

QuantizationBatch::QuantizationBatch()
    : pending_(std::make_unique<Pending>()),
      outer_(g_open),
      exceptions_(std::uncaught_exceptions()) {
  g_open = this;
}

QuantizationBatch::~QuantizationBatch() noexcept(false) {
  g_open = outer_;
  // Left by an exception, nothing reads what was gathered: it is dropped.
  if (std::uncaught_exceptions() == exceptions_) launch();
}

void QuantizationBatch::launch() {
#ifdef LPBENCH_CUDA_GLUE
  if (pending_->calls.empty()) return;
  Pending now = std::exchange(*pending_, Pending{});
  // A region of its own: the gathered calls' regions timed nothing (`--regions`).
  const profiling::Range range("quantize", "batch");
  cuda::quantize_tensorwise_batch(now.calls, now.stream);
#endif
}

#ifdef LPBENCH_CUDA_GLUE
QuantizationBatch* QuantizationBatch::open() {
  return g_open;
}

void QuantizationBatch::gather(const cuda::QuantizeArgs& args, cudaStream_t stream,
                               std::vector<at::Tensor> alive) {
  if (!pending_->calls.empty() && stream != pending_->stream) launch();
  pending_->stream = stream;
  pending_->calls.push_back(args);
  for (at::Tensor& t : alive)
    pending_->alive.push_back(std::move(t));
  ++gathered_;
}
#endif

}  // namespace lpbench::kernels
