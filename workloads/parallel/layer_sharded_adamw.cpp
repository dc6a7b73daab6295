#include "workloads/parallel/layer_sharded_adamw.h"

#include <c10/core/AllocatorConfig.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "kernels/profiling/range.h"
#include "workloads/models/storage.h"

namespace lpbench::workloads::parallel {

namespace {

// `t` becomes a view of `flat` at `offset`, keeping its identity (as sharded_adamw.cpp does).
void place(torch::Tensor& t, const torch::Tensor& flat, int64_t offset) {
  t.set_(flat.storage(), offset, t.sizes(), c10::contiguous_strides(t.sizes()));
}

}  // namespace

bool prefer_expandable_segments(const torch::Device& device) {
  if (!device.is_cuda() || std::getenv("PYTORCH_CUDA_ALLOC_CONF") != nullptr) return false;
  c10::CachingAllocator::setAllocatorSettings("expandable_segments:True");
  return true;
}

LayerShardedAdamW::Part LayerShardedAdamW::make_part(std::vector<torch::Tensor> parameters,
                                                     std::vector<ComputeCopy>& copies, bool bf16) {
  Part part;
  part.parameters = std::move(parameters);
  part.bf16 = bf16;
  if (part.parameters.empty()) return part;
  int64_t total = 0;
  for (const torch::Tensor& p : part.parameters) {
    if (p.scalar_type() != torch::kFloat) {
      throw std::invalid_argument("LayerShardedAdamW: every parameter must be an FP32 master");
    }
    total += p.numel();
  }
  part.shard = (total + group_->size - 1) / group_->size;
  const torch::TensorOptions options = part.parameters.front().options();
  part.masters = torch::zeros({part.shard * group_->size}, options);
  part.gathered = part.masters;
  if (bf16) {
    part.gathered = torch::zeros({part.shard * group_->size}, options.dtype(torch::kBFloat16));
  }
  int64_t at = 0;
  for (torch::Tensor& p : part.parameters) {
    part.masters.narrow(0, at, p.numel()).copy_(p.reshape({-1}));
    for (ComputeCopy& copy : copies) {
      if (bf16 && copy.master.unsafeGetTensorImpl() == p.unsafeGetTensorImpl()) {
        place(copy.bf16, part.gathered, at);
      }
    }
    place(p, part.masters, at);
    at += p.numel();
  }
  // Every rank starts from rank 0's weights, whatever its own generator drew.
  broadcast(*group_, part.masters, 0);
  if (bf16) part.gathered.copy_(part.masters);
  return part;
}

LayerShardedAdamW::Unit LayerShardedAdamW::make_unit(ParameterUnit source) {
  std::vector<torch::Tensor> plain;
  std::vector<torch::Tensor> copied;
  for (torch::Tensor& p : source.parameters) {
    const bool has_copy =
        std::any_of(source.copies.begin(), source.copies.end(), [&](const ComputeCopy& c) {
          return c.master.unsafeGetTensorImpl() == p.unsafeGetTensorImpl();
        });
    (has_copy ? copied : plain).push_back(p);
  }
  Unit unit;
  unit.plain = make_part(std::move(plain), source.copies, false);
  unit.copied = make_part(std::move(copied), source.copies, true);
  return unit;
}

torch::Tensor LayerShardedAdamW::slice(torch::Tensor& flat, const Part& part) {
  return flat.narrow(0, part.offset, part.shard);
}

template <typename Visit>
void LayerShardedAdamW::for_each_part(Visit visit) {
  visit(outer_.plain);
  visit(outer_.copied);
  for (Unit& unit : layers_) {
    visit(unit.plain);
    visit(unit.copied);
  }
}

LayerShardedAdamW::LayerShardedAdamW(ParameterUnit outer, std::vector<ParameterUnit> layers,
                                     Sharding stage, const TrainingOptions& options,
                                     std::shared_ptr<const Group> group)
    : stage_(stage), options_(options), group_(std::move(group)), state_(0, torch::kFloat) {
  if (stage_ == Sharding::zero1 || layers.empty()) {
    throw std::invalid_argument("LayerShardedAdamW: stage 2 or 3, over at least one layer");
  }
  const torch::NoGradGuard no_grad;
  const torch::TensorOptions flat_options = outer.parameters.front().options();
  outer_ = make_unit(std::move(outer));
  for (ParameterUnit& layer : layers)
    layers_.push_back(make_unit(std::move(layer)));
  int64_t total = 0;
  bool any_bf16 = false;
  for_each_part([&](Part& part) {
    part.offset = total;
    total += part.shard;
    any_bf16 = any_bf16 || (part.bf16 && part.shard > 0);
  });
  master_ = torch::empty({total}, flat_options);
  const int64_t rank = group_->rank;
  for_each_part([&](Part& part) {
    if (part.shard == 0) return;
    slice(master_, part).copy_(part.masters.narrow(0, rank * part.shard, part.shard));
    // The BF16 parts' masters are their slices from now on: the whole buffer is not kept.
    if (part.bf16) free_storage(part.masters);
  });
  if (any_bf16) master_bf16_ = master_.to(torch::kBFloat16);
  if (stage_ == Sharding::zero3) {
    for (Unit& unit : layers_)
      release(unit);
  }
  grad_shard_ = torch::zeros({total}, flat_options);
  state_ = ShardState(total, flat_options);
  // The outer unit's gradients live for the whole step; the layers' only in their backward.
  attach_gradients(outer_.plain);
  attach_gradients(outer_.copied);
}

void LayerShardedAdamW::release(Unit& unit) {
  for (Part* part : {&unit.plain, &unit.copied}) {
    if (part->shard > 0) free_storage(part->gathered);
  }
  unit.resident = false;
}

void LayerShardedAdamW::start_gather(Part& part) {
  if (part.shard == 0 || part.gather.work) return;
  allocate_storage(part.gathered);
  torch::Tensor mine = slice(part.bf16 ? master_bf16_ : master_, part);
  part.gather = start_all_gather(*group_, part.gathered, mine);
}

void LayerShardedAdamW::finish_gather(Part& part) {
  if (part.shard == 0) return;
  start_gather(part);
  finish(*group_, part.gather);
}

void LayerShardedAdamW::start_gather(Unit& unit) {
  if (unit.resident) return;
  start_gather(unit.copied);
  start_gather(unit.plain);
}

void LayerShardedAdamW::finish_gather(Unit& unit) {
  if (unit.resident) return;
  start_gather(unit);
  finish_gather(unit.copied);
  finish_gather(unit.plain);
  unit.resident = true;
}

void LayerShardedAdamW::attach_gradients(Part& part) {
  if (part.shard == 0) return;
  part.grads = torch::zeros({part.shard * group_->size}, master_.options());
  int64_t at = 0;
  for (torch::Tensor& p : part.parameters) {
    p.mutable_grad() = part.grads.narrow(0, at, p.numel()).view(p.sizes());
    at += p.numel();
  }
}

// A layer's gradients arrive as autograd hands them over (fresh tensors, kept as they are), and
// are copied into one flat buffer for the reduce-scatter: two passes over them, where
// accumulating into a zeroed buffer costs four (zeroing, then reading both and writing); a
// parameter no gradient reached (an idle expert) gets zeros.
void LayerShardedAdamW::collect_gradients(Part& part) {
  if (part.shard == 0) return;
  part.grads = torch::empty({part.shard * group_->size}, master_.options());
  int64_t at = 0;
  for (torch::Tensor& p : part.parameters) {
    torch::Tensor into = part.grads.narrow(0, at, p.numel());
    if (p.grad().defined()) {
      into.copy_(p.grad().reshape({-1}));
    } else {
      into.zero_();
    }
    at += p.numel();
  }
  part.grads.narrow(0, at, part.grads.numel() - at).zero_();
}

void LayerShardedAdamW::reduce_gradients(Part& part) {
  if (part.shard == 0) return;
  torch::Tensor out = slice(grad_shard_, part);
  reductions_.push_back(start_reduce_scatter_sum(*group_, out, part.grads));
  for (torch::Tensor& p : part.parameters)
    p.mutable_grad() = torch::Tensor();
  part.grads = torch::Tensor();
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
}

void LayerShardedAdamW::after_backward(int64_t layer) {
  const torch::NoGradGuard no_grad;
  Unit& unit = layers_[static_cast<size_t>(layer)];
  // The layer above's reduction, issued one layer of backward ago, is waited for first: at most
  // two layers' gradients are held at once (this layer's, then its flat copy while it reduces
  // and the next layer's accumulate).
  finish_reductions();
  collect_gradients(unit.copied);
  collect_gradients(unit.plain);
  reduce_gradients(unit.copied);
  reduce_gradients(unit.plain);
  if (stage_ == Sharding::zero3) release(unit);
}

void LayerShardedAdamW::finish_reductions() {
  while (!reductions_.empty()) {
    finish(*group_, reductions_.front());
    reductions_.pop_front();
  }
}

void LayerShardedAdamW::zero_grad() {
  for (Part* part : {&outer_.plain, &outer_.copied}) {
    if (part->shard > 0) part->grads.zero_();
  }
}

double LayerShardedAdamW::step(double lr) {
  const profiling::Range range("optimizer");
  const torch::NoGradGuard no_grad;
  finish_reductions();
  for (Part* part : {&outer_.plain, &outer_.copied}) {
    if (part->shard == 0) continue;
    torch::Tensor out = slice(grad_shard_, *part);
    reduce_scatter_sum(*group_, out, part->grads);
  }
  const double norm = update_shard(*group_, options_, master_, grad_shard_, state_, lr);
  if (master_bf16_.defined()) master_bf16_.copy_(master_);
  auto gather = [&](Unit& unit) {
    unit.resident = false;
    finish_gather(unit);
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
