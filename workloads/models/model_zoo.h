#pragma once

#include <vector>

#include "workloads/models/model_config.h"

namespace lpbench::workloads {

// The built-in models: the seed paper's six, as published, and two small ones for tests and
// convergence runs.
const std::vector<ModelConfig>& model_zoo();

}  // namespace lpbench::workloads
