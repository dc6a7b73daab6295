#pragma once

#include <optional>
#include <string>

// What a launcher tells one rank through the standard environment (torchrun, SLURM wrappers,
// mpirun with these exported, or `lpbench run --nproc-per-node`): RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT.
namespace lpbench::dist {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  // The launcher hosts the rendezvous store (torchrun's agent, lpbench's own launcher), so rank 0
  // joins it as a client rather than serving it.
  bool agent_store = false;
};

// nullopt where WORLD_SIZE is not set (one process); InputError naming the variable where one
// is missing or malformed.
std::optional<LaunchEnv> launch_env_from_environment();

}  // namespace lpbench::dist
