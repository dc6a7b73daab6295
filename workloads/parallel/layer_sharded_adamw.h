#pragma once

#include <torch/torch.h>

#include <deque>
#include <memory>
#include <vector>

#include "workloads/levels/optimizer.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"
#include "workloads/models/parameter_hooks.h"
#include "workloads/parallel/group.h"
#include "workloads/parallel/shard_update.h"

namespace lpbench::workloads::parallel {

// AdamW over data-parallel ranks with gradients (ZeRO stage 2) and, at stage 3, the layers'
// parameters sharded as well (FSDP's scheme), one decoder layer at a time:
//   - each rank keeps 1/size of every layer's FP32 masters, gradients and moments;
//   - stage 3: a layer's weights are all-gathered just before it runs (in forward, and again
//     when checkpointing recomputes it at the start of its backward) and freed after; the next
//     layer's gather is issued before the current one's compute, so it runs beside it;
//   - after a layer's backward, its gradients are reduce-scattered while the backward of the
//     layer below runs; the buffer is freed once that collective ends;
//   - the parameters outside the layers (embedding, final norm, output layer) stay whole on
//     every rank (their gradients are reduced after backward);
//   - the update is shard_update.h's; stage 2 all-gathers the updated layers after it.
// It is the ParameterHooks the decoder calls, so it needs activation checkpointing (the hooks
// run at the recomputation's boundary). The fused BF16 copies of the weights live beside the
// gathered masters and are refreshed here; the caller must not refresh them.
class LayerShardedAdamW final : public Optimizer, public ParameterHooks {
 public:
  LayerShardedAdamW(ParameterUnit outer, std::vector<ParameterUnit> layers, Sharding stage,
                    const TrainingOptions& options, std::shared_ptr<const Group> group);
  void zero_grad() override;
  double step(double lr) override;
  bool refreshes_compute_copies() const override { return true; }

  void before_forward(int64_t layer) override;
  void after_forward(int64_t layer) override;
  void before_backward(int64_t layer) override;
  void after_backward(int64_t layer) override;

 private:
  // A set of parameters stored as one flat buffer [size · shard], padded; this rank's slice is
  // [rank · shard, (rank + 1) · shard).
  struct Unit {
    std::vector<torch::Tensor> parameters;
    int64_t shard = 0;    // elements per rank
    int64_t offset = 0;   // where this unit's slice starts in the rank's flat state
    torch::Tensor full;   // the masters' storage, gathered (stage 3: only while in use)
    torch::Tensor bf16;   // the BF16 copies' storage, same offsets (fused only)
    torch::Tensor grads;  // the gradients' storage, during the unit's backward
    Pending gather;
    bool resident = true;
  };

  Unit make_unit(ParameterUnit unit, int64_t offset);
  torch::Tensor slice(torch::Tensor& flat, const Unit& unit);
  void start_gather(Unit& unit);
  void finish_gather(Unit& unit);
  void release(Unit& unit);
  void attach_gradients(Unit& unit);

  Sharding stage_;
  TrainingOptions options_;
  std::shared_ptr<const Group> group_;
  Unit outer_;
  std::vector<Unit> layers_;
  torch::Tensor master_;      // this rank's slices of every unit's masters, one after another
  torch::Tensor grad_shard_;  // and of their reduced gradients
  ShardState state_;
  std::deque<Pending> reductions_;  // reduce-scatters issued and not yet waited for
};

}  // namespace lpbench::workloads::parallel
