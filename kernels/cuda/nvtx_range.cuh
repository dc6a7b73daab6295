#pragma once

#include <nvtx3/nvToolsExt.h>

namespace lpbench::cuda {

// An NVTX range (default domain) around a kernel launcher's work, so that Nsight timelines name
// lpbench's own launches.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace lpbench::cuda
