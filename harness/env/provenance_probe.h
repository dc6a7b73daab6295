#pragma once

#include <c10/core/Device.h>

#include "base/env/provenance.h"

namespace lpbench::env {

// The provenance of a run on `device`: this build, this host, its CPU, and the GPU, driver and
// CUDA runtime where the device is one.
Provenance collect_provenance(const c10::Device& device);

}  // namespace lpbench::env
