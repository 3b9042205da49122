#include "framework/jit/replicated_function.h"

#include <mutex>
#include <utility>

#include "framework/core/error.h"

namespace kestrel::jit {

ReplicatedFunction::ReplicatedFunction(std::vector<Variable> state, StateFn fn, std::string name,
                                       ReplicaDeviceMemory memory)
    : state_(std::move(state)), fn_(std::move(fn)), memory_(std::move(memory)), programs_(std::move(name)) {
  if (!fn_) throw ValueError("jit::ReplicatedFunction '" + programs_.function_name() + "': the function is empty");
}

// A replica's device holds the program's inputs (the weights and its shard), its intermediates
// and outputs (the gradients), and what stays between steps (the optimizer's state).
void ReplicatedFunction::check_fits(const Executor& program, const std::string& signature) const {
  if (memory_.limit <= 0) return;
  const MemoryPlan& plan = program.memory_plan();
  const std::int64_t needed = plan.pinned_bytes + plan.arena_bytes + plan.output_bytes + memory_.resident_bytes;
  if (needed <= memory_.limit) return;
  throw ResourceExhaustedError(
      "ResourceExhausted: '" + name() + "' for " + signature + " needs " + format_bytes(needed) +
      " per replica (weights and inputs " + format_bytes(plan.pinned_bytes) + ", intermediates " +
      format_bytes(plan.arena_bytes) + ", outputs " + format_bytes(plan.output_bytes) + ", optimizer state " +
      format_bytes(memory_.resident_bytes) + ") but " + memory_.device + " has " + format_bytes(memory_.limit) +
      "; use a smaller global batch (it is split over the replicas), shorter sequences or a smaller model");
}

Graph ReplicatedFunction::trace(const Args& args) const {
  StateTrace traced = trace_with_state(state_, args, fn_);
  if (!traced.updated.empty()) {
    throw JitError("jit::ReplicatedFunction '" + name() + "' assigns variable '" + state_[traced.updated[0]].name() +
                   "', which every replica shares; return the new value and assign it once, after the replicas ran");
  }
  return std::move(traced.graph);
}

std::vector<std::vector<Tensor>> ReplicatedFunction::operator()(const std::vector<Args>& per_replica,
                                                                const ForEachReplica& for_each,
                                                                const std::string& key) {
  if (per_replica.empty()) throw ValueError("jit::ReplicatedFunction '" + name() + "': no replica arguments");
  const std::string signature = signature_of_args(name(), per_replica[0], key);
  // Compiled (once) here, on the calling thread; the replicas only run it.
  for (std::size_t r = 1; r < per_replica.size(); ++r) {
    if (signature_of_args(name(), per_replica[r], key) != signature) {
      throw ShapeError("jit::ReplicatedFunction '" + name() + "': replica " + std::to_string(r) + " has arguments " +
                       signature_of_args(name(), per_replica[r], key) + " but replica 0 has " + signature +
                       "; every replica runs one program, so their shards must have one shape");
    }
  }
  const std::int64_t compiles_before = programs_.compile_count();
  const Executor& first = programs_.get(signature, [&] { return trace(per_replica[0]); });
  if (programs_.compile_count() != compiles_before) check_fits(first, signature);
  planned_bytes_ = first.planned_bytes();

  // A replica runs on an executor (and arena) that no running replica holds: host memory grows
  // with the replicas that run at once (the strategy's threads), not with the replicas in sync.
  // Which instance a replica gets changes nothing in its results.
  std::mutex instances_mutex;
  std::vector<int> free_instances;  // a stack: the instance freed last is reused first
  int made = 0;
  auto take_instance = [&]() -> std::pair<int, const Executor*> {
    std::lock_guard<std::mutex> lock(instances_mutex);
    int instance = made;
    if (free_instances.empty()) {
      ++made;
    } else {
      instance = free_instances.back();
      free_instances.pop_back();
    }
    return {instance, instance == 0 ? &first
                                    : &programs_.get(
                                          signature, [&] { return trace(per_replica[0]); }, instance)};
  };
  auto give_back = [&](int instance) {
    std::lock_guard<std::mutex> lock(instances_mutex);
    free_instances.push_back(instance);
  };

  std::vector<std::vector<Tensor>> outputs(per_replica.size());
  for_each([&](int replica) {
    const auto r = static_cast<std::size_t>(replica);
    std::vector<Tensor> inputs;
    inputs.reserve(state_.size() + per_replica[r].size());
    for (const Variable& v : state_) inputs.push_back(v.value());
    for (const auto& entry : per_replica[r]) inputs.push_back(entry.second);
    const auto [instance, program] = take_instance();
    try {
      outputs[r] = program->run(inputs);
    } catch (...) {
      give_back(instance);
      throw;
    }
    give_back(instance);
  });
  return outputs;
}

}  // namespace kestrel::jit
