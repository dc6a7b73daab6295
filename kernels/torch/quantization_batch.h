#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#ifdef LPBENCH_CUDA_GLUE
#include <cuda_runtime_api.h>

#include "kernels/cuda/quantize.cuh"
#endif

namespace lpbench::kernels {

// While one is open on this thread, the GPU quantizations that quantize() and
// quantize_with_transpose() would launch as the one-pass tensorwise kernel by an amax already
// known (a weight's, which AdamW or a layer's ScopedAmaxes remembered: weight_amax.h) are
// gathered instead, and launched together when it closes, one kernel for up to eight of a format
// (kernels/cuda/quantize_tensorwise.cuh: quantize_tensorwise_batch). The same bits as launched one
// by one. A layer opens one around its weights' quantizations at its start: 10 µs less kernel
// time a layer step at llama2-7b (docs/perf-log.md §72).
//
// What a gathered call returns holds its values only once the batch has closed: nothing inside
// the scope may read it, and the GPU starts none of them before then. Other quantizations (a
// history's, an amax to find, another kernel's) are launched as they come. A scope left by an
// exception launches nothing it gathered. On the CPU, or in a build without CUDA, it gathers
// nothing.
class QuantizationBatch {
 public:
  QuantizationBatch();
  ~QuantizationBatch() noexcept(false);  // launches what it gathered (a launch's error throws)
  QuantizationBatch(const QuantizationBatch&) = delete;
  QuantizationBatch& operator=(const QuantizationBatch&) = delete;

  // How many calls it has gathered, launched or not.
  int64_t gathered() const { return gathered_; }

#ifdef LPBENCH_CUDA_GLUE
  // The innermost batch open on this thread, or null.
  static QuantizationBatch* open();
  // Gathers a call that cuda::tensorwise_batch_takes, to be launched on `stream`, keeping `alive`
  // (what it reads) until then. A call on another stream than the gathered ones' launches those
  // first.
  void gather(const cuda::QuantizeArgs& args, cudaStream_t stream, std::vector<at::Tensor> alive);
#endif

 private:
  void launch();

  struct Pending;  // the gathered calls not yet launched
  std::unique_ptr<Pending> pending_;
  QuantizationBatch* outer_;
  int exceptions_;
  int64_t gathered_ = 0;
};

}  // namespace lpbench::kernels
