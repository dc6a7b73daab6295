#pragma once

#include <functional>
#include <memory>

#include "workloads/levels/workload.h"

namespace at::cuda {
struct CUDAGraph;
}  // namespace at::cuda

namespace lpbench::runner {

// A workload's step captured once into a CUDA graph and replayed for the steps after it
// (`lpbench run --cuda-graph`), so that the GPU never waits on the host's kernel launches:
// what is timed is the GPU's work alone, the same for every recipe. Only steps whose work does
// not change from step to step on the host side may be captured (config's check_cuda_graph says
// which: no host reads, no per-step seeds; an amax history moves on on the device).
class StepGraph {
 public:
  // Runs `step` once eagerly on a side stream (lazy initialisation there: cuBLAS workspaces,
  // cuDNN plans), then captures it on that stream. Nothing of either is timed; the memory the
  // step allocates stays with the graph's private pool until the graph is destroyed.
  explicit StepGraph(const std::function<workloads::StepOutput()>& step);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Queues the captured step on the current stream; returns what the captured step returned.
  workloads::StepOutput replay();

 private:
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  workloads::StepOutput output_;
};

}  // namespace lpbench::runner
