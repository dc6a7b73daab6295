#include "harness/timing/trace.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <set>

namespace lpbench::timing {

namespace {

namespace prof = torch::profiler::impl;

std::set<prof::ActivityType> activities(const c10::Device& device) {
  std::set<prof::ActivityType> set{prof::ActivityType::CPU};
  if (device.is_cuda()) set.insert(prof::ActivityType::CUDA);
  return set;
}

}  // namespace

// Asked of the library itself: a profile of one small operation, started and stopped.
bool profiler_available() {
  try {
    TraceCapture capture(c10::Device(c10::kCPU));
    at::ones({8}).sum();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

TraceCapture::TraceCapture(const c10::Device& device) {
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  torch::autograd::profiler::prepareProfiler(config, activities(device));
  torch::autograd::profiler::enableProfiler(config, activities(device));
  active_ = true;
}

TraceCapture::~TraceCapture() {
  if (active_) torch::autograd::profiler::disableProfiler();
}

void TraceCapture::save(const std::string& path) {
  active_ = false;
  torch::autograd::profiler::disableProfiler()->save(path);
}

}  // namespace lpbench::timing
