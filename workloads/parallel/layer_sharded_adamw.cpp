#include "workloads/parallel/layer_sharded_adamw.h"

#include <c10/core/StorageImpl.h>

#include <stdexcept>

#include "kernels/profiling/range.h"

namespace lpbench::workloads::parallel {

namespace {

// A flat buffer's memory is given back and taken again while its tensor, and every parameter
// viewing it, keeps its identity and shape (what FSDP does with storage().resize_()): the
// modules, and autograd's records of the parameters, never see the swap. The CUDA caching
// allocator orders reuse on the allocating stream, so memory freed while queued kernels still
// read it is not handed out before they ran.
void free_storage(torch::Tensor& flat) {
  c10::StorageImpl* impl = flat.storage().unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(c10::DataPtr(nullptr, impl->device()));
  impl->set_nbytes(0);
}

void allocate_storage(torch::Tensor& flat) {
  c10::StorageImpl* impl = flat.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(flat.numel()) * flat.element_size();
  impl->set_data_ptr_noswap(impl->allocator()->allocate(bytes));
  impl->set_nbytes(bytes);
}

// `t` becomes a view of `flat` at `offset`, keeping its identity (as sharded_adamw.cpp does).
void place(torch::Tensor& t, const torch::Tensor& flat, int64_t offset) {
  t.set_(flat.storage(), offset, t.sizes(), c10::contiguous_strides(t.sizes()));
}

}  // namespace

LayerShardedAdamW::Unit LayerShardedAdamW::make_unit(ParameterUnit source, int64_t offset) {
  Unit unit;
  unit.parameters = std::move(source.parameters);
  int64_t total = 0;
  for (const torch::Tensor& p : unit.parameters) {
    if (p.scalar_type() != torch::kFloat) {
      throw std::invalid_argument("LayerShardedAdamW: every parameter must be an FP32 master");
    }
    total += p.numel();
  }
  unit.shard = (total + group_->size - 1) / group_->size;
  unit.offset = offset;
  const torch::TensorOptions options = unit.parameters.front().options();
  unit.full = torch::zeros({unit.shard * group_->size}, options);
  if (!source.copies.empty()) {
    unit.bf16 = torch::zeros({unit.shard * group_->size}, options.dtype(torch::kBFloat16));
  }
  int64_t at = 0;
  for (torch::Tensor& p : unit.parameters) {
    unit.full.narrow(0, at, p.numel()).copy_(p.reshape({-1}));
    for (ComputeCopy& copy : source.copies) {
      if (copy.master.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) {
        place(copy.bf16, unit.bf16, at);
      }
    }
    place(p, unit.full, at);
    at += p.numel();
  }
  // Every rank starts from rank 0's weights, whatever its own generator drew.
  broadcast(*group_, unit.full, 0);
  if (unit.bf16.defined()) unit.bf16.copy_(unit.full);
  return unit;
}

torch::Tensor LayerShardedAdamW::slice(torch::Tensor& flat, const Unit& unit) {
  return flat.narrow(0, unit.offset, unit.shard);
}

LayerShardedAdamW::LayerShardedAdamW(ParameterUnit outer, std::vector<ParameterUnit> layers,
                                     Sharding stage, const TrainingOptions& options,
                                     std::shared_ptr<const Group> group)
    : stage_(stage), options_(options), group_(std::move(group)), state_(0, torch::kFloat) {
  if (stage_ == Sharding::zero1 || layers.empty()) {
    throw std::invalid_argument("LayerShardedAdamW: stage 2 or 3, over at least one layer");
  }
  const torch::NoGradGuard no_grad;
  int64_t offset = 0;
  outer_ = make_unit(std::move(outer), offset);
  offset += outer_.shard;
  for (ParameterUnit& layer : layers) {
    layers_.push_back(make_unit(std::move(layer), offset));
    offset += layers_.back().shard;
  }
  const torch::TensorOptions flat_options = outer_.full.options();
  master_ = torch::empty({offset}, flat_options);
  const int64_t rank = group_->rank;
  auto take_slice = [&](Unit& unit) {
    slice(master_, unit).copy_(unit.full.narrow(0, rank * unit.shard, unit.shard));
  };
  take_slice(outer_);
  for (Unit& unit : layers_) {
    take_slice(unit);
    if (stage_ == Sharding::zero3) release(unit);
  }
  grad_shard_ = torch::zeros({offset}, flat_options);
  state_ = ShardState(offset, flat_options);
  // The outer unit's gradients live for the whole step; the layers' only in their backward.
  outer_.grads = torch::zeros_like(outer_.full);
  int64_t at = 0;
  for (torch::Tensor& p : outer_.parameters) {
    p.mutable_grad() = outer_.grads.narrow(0, at, p.numel()).view(p.sizes());
    at += p.numel();
  }
}

void LayerShardedAdamW::release(Unit& unit) {
  free_storage(unit.full);
  if (unit.bf16.defined()) free_storage(unit.bf16);
  unit.resident = false;
}

void LayerShardedAdamW::start_gather(Unit& unit) {
  if (unit.resident || unit.gather.work) return;
  allocate_storage(unit.full);
  torch::Tensor mine = slice(master_, unit);
  unit.gather = start_all_gather(*group_, unit.full, mine);
}

void LayerShardedAdamW::finish_gather(Unit& unit) {
  if (unit.resident) return;
  start_gather(unit);
  finish(*group_, unit.gather);
  if (unit.bf16.defined()) {
    allocate_storage(unit.bf16);
    unit.bf16.copy_(unit.full);
  }
  unit.resident = true;
}

void LayerShardedAdamW::attach_gradients(Unit& unit) {
  unit.grads = torch::zeros({unit.full.numel()}, unit.full.options());
  int64_t at = 0;
  for (torch::Tensor& p : unit.parameters) {
    p.mutable_grad() = unit.grads.narrow(0, at, p.numel()).view(p.sizes());
    at += p.numel();
  }
}

void LayerShardedAdamW::before_forward(int64_t layer) {
  if (stage_ != Sharding::zero3) return;
  const torch::NoGradGuard no_grad;
  const auto i = static_cast<size_t>(layer);
  start_gather(layers_[i]);
  if (i + 1 < layers_.size()) start_gather(layers_[i + 1]);
  finish_gather(layers_[i]);
}

void LayerShardedAdamW::after_forward(int64_t layer) {
  // The last layer's backward comes first: its weights stay.
  const auto i = static_cast<size_t>(layer);
  if (stage_ == Sharding::zero3 && i + 1 < layers_.size()) release(layers_[i]);
}

void LayerShardedAdamW::before_backward(int64_t layer) {
  const torch::NoGradGuard no_grad;
  const auto i = static_cast<size_t>(layer);
  if (stage_ == Sharding::zero3) {
    start_gather(layers_[i]);
    if (i > 0) start_gather(layers_[i - 1]);
    finish_gather(layers_[i]);
  }
  attach_gradients(layers_[i]);
}

void LayerShardedAdamW::after_backward(int64_t layer) {
  const torch::NoGradGuard no_grad;
  Unit& unit = layers_[static_cast<size_t>(layer)];
  torch::Tensor out = slice(grad_shard_, unit);
  reductions_.push_back(start_reduce_scatter_sum(*group_, out, unit.grads));
  for (torch::Tensor& p : unit.parameters)
    p.mutable_grad() = torch::Tensor();
  unit.grads = torch::Tensor();
  if (stage_ == Sharding::zero3) release(unit);
  // At most two layers' gradient buffers at once: the one just issued and the one before.
  while (reductions_.size() > 1) {
    finish(*group_, reductions_.front());
    reductions_.pop_front();
  }
}

void LayerShardedAdamW::zero_grad() {
  outer_.grads.zero_();
}

double LayerShardedAdamW::step(double lr) {
  const profiling::Range range("optimizer");
  const torch::NoGradGuard no_grad;
  while (!reductions_.empty()) {
    finish(*group_, reductions_.front());
    reductions_.pop_front();
  }
  torch::Tensor outer_out = slice(grad_shard_, outer_);
  reduce_scatter_sum(*group_, outer_out, outer_.grads);
  const double norm = update_shard(*group_, options_, master_, grad_shard_, state_, lr);
  auto gather = [&](Unit& unit) {
    torch::Tensor mine = slice(master_, unit);
    all_gather(*group_, unit.full, mine);
    if (unit.bf16.defined()) unit.bf16.copy_(unit.full);
  };
  gather(outer_);
  for (Unit& unit : layers_) {
    if (stage_ == Sharding::zero3) {
      // Gathered again where next used; a layer kept since the forward is stale now.
      if (unit.resident) release(unit);
    } else {
      gather(unit);
    }
  }
  return norm;
}

}  // namespace lpbench::workloads::parallel
