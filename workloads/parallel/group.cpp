#include "workloads/parallel/group.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/profiling/range.h"

namespace lpbench::workloads::parallel {

namespace {

// Whether an earlier collective of this process failed: a group whose peer is gone cannot be
// trusted again (NCCL would wait for the peer until its watchdog ends the process).
struct Broken {
  bool broken = false;
  std::string why;
};
Broken& broken_state() {
  static Broken state;
  return state;
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// NCCL's wait() only orders the calling stream after the collective: a peer that died leaves
// this rank blocked at its next host synchronization until NCCL's watchdog gives up (the
// timeout, then a dump of its state; seen on two H100s: rank 0 still hung 30 s after a 60 s
// timeout). Waiting on the host here instead, looking every 100 ms at the launcher's record of
// ranks that ended, turns a dead peer into an error within a fraction of a second: the
// communicator is aborted (its kernels return) and the caller's catch names the rank. The price:
// the host's lead over the GPU drains at each collective (measured in docs/perf-log.md §16).
void wait_watching_peers(const Group& group, c10d::Work& work) {
  using clock = std::chrono::steady_clock;
  const auto every = std::chrono::milliseconds(100);
  auto next_look = clock::now() + every;
  while (!work.isCompleted()) {
    if (group.peer_ended && clock::now() >= next_look) {
      next_look = clock::now() + every;
      if (!group.peer_ended().empty()) {
        group.backend->abort();
        throw std::runtime_error("a peer rank ended; the communicator was aborted");
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

[[noreturn]] void fail(const Group& group, const char* name, const std::exception& e) {
  Broken& state = broken_state();
  std::string known = group.explain_failure ? group.explain_failure() : std::string();
  state.broken = true;
  state.why =
      known.empty() ? "a peer rank stopped, hung past the timeout or lost its network" : known;
  throw std::runtime_error(fmt::format("data parallel: {} failed on rank {} of {}: {} ({})", name,
                                       group.rank, group.size, state.why, first_line(e.what())));
}

void refuse_if_broken(const Group& group, const char* name) {
  const Broken& state = broken_state();
  if (state.broken) {
    throw std::runtime_error(
        fmt::format("data parallel: {} not attempted on rank {}: the group "
                    "broke earlier ({})",
                    name, group.rank, state.why));
  }
}

void wait_for(const Group& group, c10d::Work& work) {
  // Gloo's wait() blocks the host already, and fails when a peer's connection drops.
  if (group.device.is_cuda()) wait_watching_peers(group, work);
  work.wait();
}

// Runs one collective under its named region and waits for it; turns any failure into one line
// naming the collective, this rank and what the launcher knows of the rank that stopped.
template <typename Issue>
void run_collective(const Group& group, const char* name, Issue issue) {
  refuse_if_broken(group, name);
  const profiling::Range range(name);
  try {
    c10::intrusive_ptr<c10d::Work> work = issue();
    wait_for(group, *work);
  } catch (const std::exception& e) {
    fail(group, name, e);
  }
}

template <typename Issue>
Pending start_collective(const Group& group, const char* name, std::vector<at::Tensor> keep,
                         Issue issue) {
  refuse_if_broken(group, name);
  try {
    return Pending{issue(), name, std::move(keep)};
  } catch (const std::exception& e) {
    fail(group, name, e);
  }
}

}  // namespace

void mark_broken(const std::string& why) {
  Broken& state = broken_state();
  if (state.broken) return;
  state.broken = true;
  state.why = why;
}

void all_reduce_sum(const Group& group, at::Tensor& tensor) {
  std::vector<at::Tensor> tensors{tensor};
  run_collective(group, "all-reduce", [&] {
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return group.backend->allreduce(tensors, options);
  });
}

void reduce_scatter_sum(const Group& group, at::Tensor& out, at::Tensor& in) {
  run_collective(group, "reduce-scatter", [&] {
    c10d::ReduceScatterOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return group.backend->_reduce_scatter_base(out, in, options);
  });
}

void all_gather(const Group& group, at::Tensor& out, at::Tensor& in) {
  run_collective(group, "all-gather", [&] { return group.backend->_allgather_base(out, in); });
}

void broadcast(const Group& group, at::Tensor& tensor, int root) {
  std::vector<at::Tensor> tensors{tensor};
  run_collective(group, "broadcast", [&] {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    return group.backend->broadcast(tensors, options);
  });
}

Pending start_all_gather(const Group& group, at::Tensor& out, at::Tensor& in) {
  return start_collective(group, "all-gather", {out, in},
                          [&] { return group.backend->_allgather_base(out, in); });
}

Pending start_reduce_scatter_sum(const Group& group, at::Tensor& out, at::Tensor& in) {
  return start_collective(group, "reduce-scatter", {out, in}, [&] {
    c10d::ReduceScatterOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return group.backend->_reduce_scatter_base(out, in, options);
  });
}

void finish(const Group& group, Pending& pending) {
  if (!pending.work) return;
  const profiling::Range range(pending.name);
  try {
    wait_for(group, *pending.work);
  } catch (const std::exception& e) {
    const char* name = pending.name;
    pending = Pending{};
    fail(group, name, e);
  }
  pending = Pending{};
}

}  // namespace lpbench::workloads::parallel
