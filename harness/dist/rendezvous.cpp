#include "harness/dist/rendezvous.h"

#include <fmt/format.h>

#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(USE_C10D_NCCL) && __has_include(<nccl.h>)
#define LPBENCH_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "base/errors.h"

namespace lpbench::dist {

namespace {

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string as_string(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}

std::vector<uint8_t> as_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

bool loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

c10::intrusive_ptr<c10d::Store> connect(const LaunchEnv& env, std::chrono::seconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.isServer = env.rank == 0 && !env.agent_store;
  options.numWorkers = env.world_size;
  options.waitWorkers = false;
  options.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    throw InputError(fmt::format(
        "rank {}: cannot {} the rendezvous at {}:{} within {} s (MASTER_ADDR, MASTER_PORT): {}",
        env.rank, options.isServer ? "serve" : "reach", env.master_addr, env.master_port,
        timeout.count(), first_line(e.what())));
  }
}

// Rank 0 compares every rank's configuration with its own and posts one verdict that every rank
// reads, so that a mismatch ends all of them with the same line (and none trains).
void check_configuration(c10d::Store& store, const LaunchEnv& env, const std::string& fingerprint) {
  store.set(fmt::format("config/{}", env.rank), as_bytes(fingerprint));
  if (env.rank == 0) {
    std::string verdict = "ok";
    for (int r = 1; r < env.world_size && verdict == "ok"; ++r) {
      if (as_string(store.get(fmt::format("config/{}", r))) != fingerprint) {
        verdict = fmt::format(
            "rank {} was started with a different configuration from rank 0's: start every rank "
            "with the same lpbench run arguments",
            r);
      }
    }
    store.set("verdict", as_bytes(verdict));
  }
  const std::string verdict = as_string(store.get("verdict"));
  if (verdict == "ok") return;
  if (env.rank != 0) {
    try {
      store.add("verdict-read", 1);
    } catch (const std::exception&) {
      // Rank 0 has gone already: the verdict was read, which is what counts.
    }
    throw InputError(verdict);
  }
  // Rank 0 may serve the store: it stays until every rank has read the verdict (at most 30 s),
  // so that none meets a closed connection in place of the reason (seen under load in CI).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (store.add("verdict-read", 0) < env.world_size - 1 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw InputError(verdict);
}

c10::intrusive_ptr<c10d::Backend> make_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                               const LaunchEnv& env, const torch::Device& device,
                                               std::chrono::seconds timeout) {
  if (device.is_cuda()) {
#ifdef LPBENCH_NCCL
    c10::cuda::set_device(device.index());
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl", store), env.rank, env.world_size, options);
    nccl->setBoundDeviceId(device);
    return nccl;
#else
    throw InputError("data parallel on GPUs needs NCCL, and this libtorch was built without it");
#endif
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(loopback(env.master_addr)
                                 ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                 : c10d::ProcessGroupGloo::createDefaultDevice());
  return c10::make_intrusive<c10d::ProcessGroupGloo>(
      c10::make_intrusive<c10d::PrefixStore>("gloo", store), env.rank, env.world_size, options);
}

// What the launcher recorded about the ranks that ended (it may need a moment to notice).
std::string ended_ranks(c10d::Store& store, int world_size, int attempts) {
  for (int attempt = 0; attempt < attempts; ++attempt) {
    std::string known;
    for (int r = 0; r < world_size; ++r) {
      if (!store.check({exit_key(r)})) continue;
      known += (known.empty() ? "" : "; ") + as_string(store.get(exit_key(r)));
    }
    if (!known.empty() || attempt + 1 == attempts) return known;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

}  // namespace

std::string exit_key(int rank) {
  return fmt::format("lpbench/exit/{}", rank);
}

std::shared_ptr<workloads::parallel::Group> join(const LaunchEnv& env, const torch::Device& device,
                                                 const std::string& fingerprint,
                                                 std::chrono::seconds timeout) {
  c10::intrusive_ptr<c10d::Store> store = connect(env, timeout);
  auto lpbench_store = c10::make_intrusive<c10d::PrefixStore>("lpbench", store);
  try {
    check_configuration(*lpbench_store, env, fingerprint);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("rank {}: the rendezvous did not complete within {} s: {}",
                                 env.rank, timeout.count(), first_line(e.what())));
  }
  auto group = std::make_shared<workloads::parallel::Group>();
  group->backend = make_backend(store, env, device, timeout);
  group->rank = env.rank;
  group->size = env.world_size;
  group->device = device;
  group->backend_name = device.is_cuda() ? "nccl" : "gloo";
  const int world_size = env.world_size;
  group->explain_failure = [store, world_size] {
    try {
      return ended_ranks(*store, world_size, 20);
    } catch (const std::exception&) {
      return std::string();  // the store went with the rank that served it
    }
  };
  group->peer_ended = [store, world_size] {
    try {
      return ended_ranks(*store, world_size, 1);
    } catch (const std::exception&) {
      return std::string();
    }
  };
  return group;
}

}  // namespace lpbench::dist
