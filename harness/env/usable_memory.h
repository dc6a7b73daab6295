#pragma once

#include <c10/core/Device.h>

namespace lpbench::env {

// The memory a run on `device` may use, in GiB: the GPU's memory less what the CUDA context
// keeps outside the allocator, or 80 % of the machine's RAM for the CPU.
double usable_memory_gib(const c10::Device& device);

}  // namespace lpbench::env
