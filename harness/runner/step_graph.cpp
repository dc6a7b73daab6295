#include "harness/runner/step_graph.h"

#include <stdexcept>

#ifdef LPBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#else
namespace at::cuda {
struct CUDAGraph {};  // a libtorch without CUDA has none; StepGraph refuses to be built there
}  // namespace at::cuda
#endif

namespace lpbench::runner {

#ifdef LPBENCH_TORCH_CUDA

StepGraph::StepGraph(const std::function<workloads::StepOutput()>& step)
    : graph_(std::make_unique<at::cuda::CUDAGraph>()) {
  // Capture needs a stream other than the legacy default one. The eager pass on the same side
  // stream first is torch's own advice (torch.cuda.graph): handles and workspaces that libraries
  // create lazily for a new stream must exist before capture, which forbids allocating them.
  c10::cuda::device_synchronize();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    step();
    side.synchronize();
    graph_->capture_begin();
    try {
      output_ = step();
    } catch (...) {
      // End the capture, or the stream stays capturing and every later launch on it fails.
      try {
        graph_->capture_end();
      } catch (const std::exception&) {  // the capture's own error: the step's is the one to tell
      }
      throw;
    }
    graph_->capture_end();
  }
  c10::cuda::device_synchronize();
  // The eager pass's blocks, cached for the side stream, would otherwise stay reserved beside
  // the graph's own pool for the rest of the sweep.
  c10::cuda::CUDACachingAllocator::emptyCache();
}

workloads::StepOutput StepGraph::replay() {
  graph_->replay();
  return output_;
}

#else

StepGraph::StepGraph(const std::function<workloads::StepOutput()>& /*step*/) {
  throw std::runtime_error("CUDA graphs need a libtorch built with CUDA");
}

workloads::StepOutput StepGraph::replay() {
  return output_;
}

#endif

StepGraph::~StepGraph() = default;

}  // namespace lpbench::runner
