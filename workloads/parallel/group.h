#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>

#include <torch/csrc/distributed/c10d/Backend.hpp>

// The processes a data-parallel run spans and the collectives the sharded step needs, over one
// c10d backend: ProcessGroupNCCL on GPUs, ProcessGroupGloo on CPUs (harness/dist builds it from
// the launch environment). The workloads only call collectives; they never start processes.
namespace lpbench::workloads::parallel {

struct Group {
  c10::intrusive_ptr<c10d::Backend> backend;
  int rank = 0;
  int size = 1;
  at::Device device{at::kCPU};  // where the collectives' tensors live
  std::string backend_name;     // "nccl" or "gloo", as the store records it
  // Why a collective failed, where the launcher knows (e.g. "rank 1 was killed by signal 9");
  // empty where it does not. Called only after a collective failed (it waits a little for the
  // launcher's record).
  std::function<std::string()> explain_failure;
  // The same record, at once (empty while every rank runs): looked at every 100 ms while an NCCL
  // collective is pending, so that a dead peer ends it (group.cpp). Optional.
  std::function<std::string()> peer_ended;
};

// Blocking collectives (they return when the result is usable on the calling stream). Each
// throws std::runtime_error naming the collective, this rank and, where known, the rank that
// stopped: a failed collective leaves the group unusable, so later calls fail at once too.
void all_reduce_sum(const Group& group, at::Tensor& tensor);
// `in` [size · n] summed over the ranks; this rank's n elements into `out` [n].
void reduce_scatter_sum(const Group& group, at::Tensor& out, at::Tensor& in);
// Every rank's `in` [n] into `out` [size · n], in rank order.
void all_gather(const Group& group, at::Tensor& out, at::Tensor& in);
void broadcast(const Group& group, at::Tensor& tensor, int root);

// A collective issued and not yet waited for, so that it runs beside the compute that follows
// (the sharded layers' gathers and reduce-scatters). It keeps its tensors alive until finished.
struct Pending {
  c10::intrusive_ptr<c10d::Work> work;
  const char* name = "";
  std::vector<at::Tensor> keep;  // the buffers the collective reads or writes
};
Pending start_all_gather(const Group& group, at::Tensor& out, at::Tensor& in);
Pending start_reduce_scatter_sum(const Group& group, at::Tensor& out, at::Tensor& in);
// Waits for a started collective under its region (the time it was exposed), with the same
// failure handling as the blocking collectives; a pending without work is finished already.
void finish(const Group& group, Pending& pending);

// Marks this process's group unusable after a failure outside a collective (a rank whose step
// failed must not join the next run's collectives while its peers wait in this run's).
void mark_broken(const std::string& why);

}  // namespace lpbench::workloads::parallel
