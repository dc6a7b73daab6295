#include "harness/dist/launch_env.h"

#include <fmt/format.h>

#include <cstdlib>

#include "base/errors.h"

namespace lpbench::dist {

namespace {

std::optional<std::string> variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

int integer_variable(const char* name, int min, int max) {
  const std::optional<std::string> text = variable(name);
  if (!text) {
    throw InputError(fmt::format(
        "WORLD_SIZE is set but {} is not: a launcher sets RANK, WORLD_SIZE, LOCAL_RANK, "
        "MASTER_ADDR and MASTER_PORT together (or use lpbench run --nproc-per-node N)",
        name));
  }
  try {
    size_t used = 0;
    const long long value = std::stoll(*text, &used);
    if (used == text->size() && value >= min && value <= max) return static_cast<int>(value);
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}='{}' is not an integer from {} to {}", name, *text, min, max));
}

}  // namespace

std::optional<LaunchEnv> launch_env_from_environment() {
  if (!variable("WORLD_SIZE")) return std::nullopt;
  LaunchEnv env;
  env.world_size = integer_variable("WORLD_SIZE", 1, 1 << 16);
  env.rank = integer_variable("RANK", 0, env.world_size - 1);
  env.local_rank =
      variable("LOCAL_RANK") ? integer_variable("LOCAL_RANK", 0, env.world_size - 1) : env.rank;
  env.master_addr = variable("MASTER_ADDR").value_or("");
  if (env.master_addr.empty()) {
    throw InputError(
        "WORLD_SIZE is set but MASTER_ADDR is not: give the address of rank 0's machine");
  }
  env.master_port = integer_variable("MASTER_PORT", 1, 65535);
  const std::optional<std::string> agent = variable("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = (agent && (*agent == "True" || *agent == "1")) ||
                    variable("LPBENCH_AGENT_STORE").value_or("") == "1";
  return env;
}

}  // namespace lpbench::dist
