#pragma once

#include <torch/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "harness/dist/launch_env.h"
#include "workloads/parallel/group.h"

// Joining the other ranks: c10d's TCPStore at MASTER_ADDR:MASTER_PORT, a check that every rank
// was started with rank 0's configuration, then the backend (NCCL for a GPU device, Gloo for the
// CPU) that the sharded step's collectives run on.
namespace lpbench::dist {

// InputError (exit 2 on every rank) where the store cannot be reached within `timeout` or a
// rank's `fingerprint` (its configuration, as text) differs from rank 0's.
std::shared_ptr<workloads::parallel::Group> join(const LaunchEnv& env, const torch::Device& device,
                                                 const std::string& fingerprint,
                                                 std::chrono::seconds timeout);

// The key under which lpbench's launcher records how a rank ended, for the survivors' errors.
std::string exit_key(int rank);

}  // namespace lpbench::dist
