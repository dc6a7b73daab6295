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
//   - stage 2: the layers' weights stay whole on every rank, gathered after each update;
//   - stage 3: a layer's weights are all-gathered just before it runs (in forward, and again
//     when checkpointing recomputes it at the start of its backward) and freed after; the next
//     layer's gather is issued before the current one's compute, so it runs beside it;
//   - after a layer's backward, its gradients are copied into one buffer and reduce-scattered
//     while the backward of the layer below runs; the buffer is freed once that collective ends;
//   - the parameters outside the layers (embedding, final norm, output layer) stay whole on
//     every rank (their gradients are reduced after backward);
//   - the update is shard_update.h's; stage 2 all-gathers the updated layers after it.
// Fused, the products read BF16 copies of the linear weights and only write their FP32 masters'
// gradients: those weights are gathered as BF16 (cast from the updated slices once a step), and
// their FP32 masters exist only as slices. The caller must not refresh the copies.
// It is the ParameterHooks the decoder calls, so it needs activation checkpointing (the hooks
// run at the recomputation's boundary).
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
  // Parameters of a unit gathered in one format, stored as flat buffers [size · shard], padded;
  // this rank's slice is [rank · shard, (rank + 1) · shard) of each.
  struct Part {
    std::vector<torch::Tensor> parameters;
    bool bf16 = false;       // the products read BF16 copies of these (fused linear weights)
    int64_t shard = 0;       // elements per rank
    int64_t offset = 0;      // where this part's slice starts in the rank's flat state
    torch::Tensor masters;   // FP32: the parameters' storage (BF16 parts: never filled again)
    torch::Tensor gathered;  // what is gathered: `masters`, or the BF16 copies' storage
    torch::Tensor grads;     // FP32: the gradients, flat (outer: their storage; layers: copied
                             // into it after the layer's backward, until reduced)
    Pending gather;
  };
  // One decoder layer's parameters, or those outside the layers.
  struct Unit {
    Part plain;   // read as FP32 (norm weights; every weight unfused)
    Part copied;  // read as BF16 copies
    bool resident = true;
  };

  Part make_part(std::vector<torch::Tensor> parameters, std::vector<ComputeCopy>& copies,
                 bool bf16);
  Unit make_unit(ParameterUnit unit);
  torch::Tensor slice(torch::Tensor& flat, const Part& part);
  void start_gather(Part& part);
  void finish_gather(Part& part);
  void start_gather(Unit& unit);
  void finish_gather(Unit& unit);
  void release(Unit& unit);
  void attach_gradients(Part& part);
  void collect_gradients(Part& part);
  void reduce_gradients(Part& part);
  void finish_reductions();  // waits for every reduce-scatter issued
  template <typename Visit>
  void for_each_part(Visit visit);

  Sharding stage_;
  TrainingOptions options_;
  std::shared_ptr<const Group> group_;
  Unit outer_;
  std::vector<Unit> layers_;
  torch::Tensor master_;       // this rank's slices of every part's masters, one after another
  torch::Tensor master_bf16_;  // the same in BF16, what the BF16 parts gather (fused only)
  torch::Tensor grad_shard_;   // this rank's slices of the reduced gradients
  ShardState state_;
  std::deque<Pending> reductions_;  // reduce-scatters issued and not yet waited for
};

// Layer sharding frees and takes back every layer's buffers at each use, sizes that a caching
// allocator's fixed segments fragment (seen: 5 GiB free in pieces, a 5.4 GiB gradient buffer
// refused). On a GPU, unless PYTORCH_CUDA_ALLOC_CONF chooses, this turns on the CUDA caching
// allocator's expandable segments (process-wide, for allocations from now on); returns whether.
bool prefer_expandable_segments(const torch::Device& device);

}  // namespace lpbench::workloads::parallel
