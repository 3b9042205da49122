#include "framework/jit/staged_run.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "framework/core/buffer.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/op_list.h"

namespace kestrel::jit {

StagedRun::StagedRun(const ReplicaStages& stages, const distribute::Distribution& distribution, StepBuffers& buffers,
                     std::size_t state_count, ProgramProfiler* collectives)
    : stages_(stages),
      distribution_(distribution),
      buffers_(buffers),
      state_count_(state_count),
      profiler_(collectives),
      replicas_(static_cast<std::size_t>(distribution.num_local_replicas())) {
  const std::size_t slots = stages_.slot_per_replica.size();
  producer_part_.assign(slots, -1);
  producer_output_.assign(slots, 0);
  for (std::size_t p = 0; p < stages_.parts.size(); ++p) {
    const std::vector<std::size_t>& outputs = stages_.parts[p].output_slots;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      producer_part_[outputs[k]] = static_cast<std::int64_t>(p);
      producer_output_[outputs[k]] = k;
    }
  }
  buffers_.part_outputs.resize(stages_.parts.size());
  for (std::size_t p = 0; p < stages_.parts.size(); ++p) {
    buffers_.part_outputs[p].resize(stages_.parts[p].per_replica ? replicas_ : 1);
    for (std::vector<Tensor>& replica : buffers_.part_outputs[p]) replica.resize(stages_.parts[p].output_slots.size());
  }
  buffers_.collective_outputs.resize(slots);
  buffers_.joined_rows.resize(slots);
  place_contraction_operands();
}

void StagedRun::place_contraction_operands() {
  for (const ReplicaStages::Stage& stage : stages_.stages) {
    for (const ReplicaStages::Collective& c : stage.collectives) {
      if (!c.contraction) continue;
      const ReplicaStages::Contraction& contraction = *c.contraction;
      for (const auto& [s, spec] :
           {std::pair{contraction.a_slot, contraction.a}, std::pair{contraction.b_slot, contraction.b}}) {
        if (producer_part_[s] < 0) continue;  // an argument: copied together when contracted
        const auto part = static_cast<std::size_t>(producer_part_[s]);
        const std::size_t k = producer_output_[s];
        std::vector<std::vector<Tensor>>& replicas = buffers_.part_outputs[part];
        if (std::any_of(replicas.begin(), replicas.end(), [&](const auto& outputs) { return outputs[k].defined(); })) {
          continue;  // last call's buffers, back for this one (or another contraction's, made already)
        }
        const std::size_t bytes = static_cast<std::size_t>(spec.shape.numel()) * size_of(spec.dtype);
        if (bytes % Buffer::kAlignment != 0) continue;  // would leave a replica's rows unaligned
        std::vector<std::shared_ptr<Buffer>> consecutive = Buffer::allocate_consecutive(bytes, replicas_);
        for (std::size_t r = 0; r < replicas_; ++r) {
          replicas[r][k] = Tensor::from_buffer(std::move(consecutive[r]), spec.shape, spec.dtype);
        }
      }
    }
  }
}

void StagedRun::start(std::vector<Tensor> state, std::vector<bool> donatable,
                      const std::vector<std::vector<Tensor>>& args) {
  const std::size_t slots = stages_.slot_per_replica.size();
  shared_.assign(slots, Tensor());
  own_.assign(replicas_, std::vector<Tensor>(slots));
  for (std::size_t j = 0; j < state.size(); ++j) shared_[j] = std::move(state[j]);
  donatable_ = std::move(donatable);
  for (std::size_t r = 0; r < args.size(); ++r) {
    for (std::size_t i = 0; i < args[r].size(); ++i) own_[r][state_count_ + i] = args[r][i];
  }
}

Tensor& StagedRun::slot(std::size_t slot, std::size_t replica) {
  return stages_.slot_per_replica[slot] ? own_[replica][slot] : shared_[slot];
}

const Tensor& StagedRun::value(std::size_t slot, std::size_t replica) const {
  return stages_.slot_per_replica[slot] ? own_[replica][slot] : shared_[slot];
}

void StagedRun::run_part(std::size_t part, const Executor& executor, std::size_t replica) {
  const ReplicaStages::Part& p = stages_.parts[part];
  std::vector<Tensor> inputs;
  inputs.reserve(p.input_slots.size());
  for (const std::size_t s : p.input_slots) inputs.push_back(slot(s, replica));
  // A variable's old buffer takes its new value when the part aliases them and nothing else holds it.
  std::vector<bool> donated(inputs.size(), false);
  for (const std::optional<std::size_t>& alias : executor.graph().output_aliases()) {
    if (alias && p.input_slots[*alias] < state_count_) donated[*alias] = donatable_[p.input_slots[*alias]];
  }
  std::vector<Tensor>& reused = buffers_.part_outputs[part][p.per_replica ? replica : 0];
  std::vector<Tensor> outputs = executor.run(inputs, donated, &reused);
  for (std::size_t k = 0; k < outputs.size(); ++k) slot(p.output_slots[k], replica) = std::move(outputs[k]);
}

namespace {

// C [m, n] = A^T B over every replica's rows: a [rows, m] and b [rows, n], row-major.
template <class T, class Out>
void multiply_over_rows(const TensorView& a, const TensorView& b, const TensorView& c) {
  kernels::gemm(kernels::GemmArgsOf<T, Out>{.m = c.shape[0],
                                            .n = c.shape[1],
                                            .k = a.shape[0],
                                            .a = a.as<T>(),
                                            .transpose_a = true,
                                            .b = b.as<T>(),
                                            .c = c.as<Out>()});
}

}  // namespace

TensorView StagedRun::joined_rows(std::size_t slot, const TensorSpec& matrix) {
  const Tensor& first = own_[0][slot];
  const std::size_t bytes = first.nbytes();
  const Shape joined{matrix.shape[0] * static_cast<std::int64_t>(replicas_), matrix.shape[1]};
  const auto* base = static_cast<const std::byte*>(first.raw_data());
  bool consecutive = true;
  for (std::size_t r = 1; r < replicas_ && consecutive; ++r) consecutive = own_[r][slot].raw_data() == base + r * bytes;
  if (consecutive) return {const_cast<std::byte*>(base), joined, first.dtype()};
  Tensor& copy = buffers_.joined_rows[slot];
  copy = Tensor::empty_or_reused(std::move(copy), joined, first.dtype());
  auto* to = static_cast<std::byte*>(copy.view().data);
  for (std::size_t r = 0; r < replicas_; ++r) std::memcpy(to + r * bytes, own_[r][slot].raw_data(), bytes);
  return copy.view();
}

Tensor StagedRun::contract(const ReplicaStages::Contraction& contraction, Tensor reused) {
  const TensorView a = joined_rows(contraction.a_slot, contraction.a);
  const TensorView b = joined_rows(contraction.b_slot, contraction.b);
  Tensor product = Tensor::empty_or_reused(std::move(reused), contraction.product.shape, contraction.product.dtype);
  const TensorView c = product.view();
  if (a.dtype == DType::float32) {
    multiply_over_rows<float, float>(a, b, c);
  } else if (c.dtype == DType::bfloat16) {
    multiply_over_rows<bfloat16, bfloat16>(a, b, c);
  } else {
    multiply_over_rows<bfloat16, float>(a, b, c);  // a bfloat16 product widened before the sum
  }
  if (contraction.sum_shape == contraction.product.shape) return product;
  return Tensor::from_buffer(product.buffer(), contraction.sum_shape, contraction.product.dtype);
}

namespace {

// Times a call into `profiler`'s entry `call`, when there is a profiler.
template <class Fn>
auto timed(ProgramProfiler* profiler, std::size_t call, Fn&& fn) {
  if (profiler == nullptr) return fn();
  const auto start = std::chrono::steady_clock::now();
  struct Add {
    ProgramProfiler* profiler;
    std::size_t call;
    std::chrono::steady_clock::time_point start;
    ~Add() {
      profiler->add(
          static_cast<std::int64_t>(call),
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
  } add{profiler, call, start};
  return fn();
}

}  // namespace

void StagedRun::run_collectives(const ReplicaStages::Stage& stage, std::size_t first) {
  // The stage's sums in one all-reduce, as an eager merge point sums its values; the products
  // over every replica's rows are this worker's sums already, then summed over the workers.
  std::vector<std::vector<Tensor>> summed(replicas_);
  std::vector<std::size_t> sum_outputs;
  std::vector<Tensor> reused_sums;
  std::vector<Tensor> products;
  std::vector<std::size_t> product_outputs;
  std::optional<std::size_t> first_sum;  // the all-reduce's time is counted there
  for (std::size_t k = 0; k < stage.collectives.size(); ++k) {
    const ReplicaStages::Collective& c = stage.collectives[k];
    Tensor& reused = buffers_.collective_outputs[c.output_slot];
    if (c.contraction) {
      products.push_back(timed(profiler_, first + k, [&] { return contract(*c.contraction, std::move(reused)); }));
      product_outputs.push_back(c.output_slot);
      continue;
    }
    std::vector<Tensor> values;
    values.reserve(replicas_);
    for (std::size_t r = 0; r < replicas_; ++r) values.push_back(slot(c.input_slot, r));
    if (c.op == OpId::all_gather) {
      shared_[c.output_slot] =
          timed(profiler_, first + k, [&] { return distribution_.all_gather(values, std::move(reused)); });
      continue;
    }
    if (!first_sum) first_sum = first + k;
    for (std::size_t r = 0; r < replicas_; ++r) summed[r].push_back(std::move(values[r]));
    sum_outputs.push_back(c.output_slot);
    reused_sums.push_back(std::move(reused));
  }
  if (!products.empty()) {
    distribution_.sum_over_workers(products);
    for (std::size_t k = 0; k < products.size(); ++k) shared_[product_outputs[k]] = std::move(products[k]);
  }
  if (sum_outputs.empty()) return;
  std::vector<Tensor> sums =
      timed(profiler_, *first_sum, [&] { return distribution_.all_reduce_sum(summed, std::move(reused_sums)); });
  for (std::size_t k = 0; k < sums.size(); ++k) shared_[sum_outputs[k]] = std::move(sums[k]);
}

void StagedRun::release(const ReplicaStages::Stage& stage) {
  for (const std::size_t s : stage.released_slots) {
    const std::int64_t part = producer_part_[s];
    for (std::size_t r = 0; r < (stages_.slot_per_replica[s] ? replicas_ : 1); ++r) {
      Tensor& value = slot(s, r);
      if (part >= 0) {
        buffers_
            .part_outputs[static_cast<std::size_t>(part)][stages_.slot_per_replica[s] ? r : 0][producer_output_[s]] =
            std::move(value);
      } else if (s >= state_count_ && !stages_.slot_per_replica[s]) {
        buffers_.collective_outputs[s] = std::move(value);  // a collective's result
      }
      value = Tensor();
    }
  }
}

void StagedRun::run_stages(const std::vector<const Executor*>& shared_parts,
                           const WithFreeInstance& with_free_instance) {
  std::size_t collectives = 0;
  for (const ReplicaStages::Stage& stage : stages_.stages) {
    if (stage.shared_part) run_part(*stage.shared_part, *shared_parts[*stage.shared_part], 0);
    if (stage.replica_part) {
      const std::size_t part = *stage.replica_part;
      distribution_.for_each_replica([&](int replica) {
        with_free_instance([&](const std::vector<const Executor*>& executors) {
          run_part(part, *executors[part], static_cast<std::size_t>(replica));
        });
      });
    }
    run_collectives(stage, collectives);
    collectives += stage.collectives.size();
    release(stage);
  }
  if (profiler_ != nullptr) profiler_->finish_run();
}

std::vector<std::optional<ProfiledOp>> profiled_collectives(const ReplicaStages& stages, int replicas) {
  std::vector<std::optional<ProfiledOp>> ops;
  for (const ReplicaStages::Stage& stage : stages.stages) {
    for (const ReplicaStages::Collective& c : stage.collectives) {
      if (!c.contraction) {
        ops.push_back(ProfiledOp{.kind = std::string(op_name(c.op))});
        continue;
      }
      const std::int64_t m = c.contraction->product.shape[0], n = c.contraction->product.shape[1];
      const std::int64_t k = c.contraction->a.shape[0] * replicas;
      ops.push_back(
          ProfiledOp{.kind = "matmul",
                     .matmul_shape = std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k),
                     .flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k)});
    }
  }
  return ops;
}

}  // namespace kestrel::jit
