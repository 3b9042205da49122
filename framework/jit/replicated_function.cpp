#include "framework/jit/replicated_function.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/distribute/merge_call.h"
#include "framework/distribute/replica_context.h"
#include "framework/jit/dump.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/jit/staged_run.h"
#include "framework/logging/logging.h"
#include "framework/ops/collective.h"

namespace kestrel::jit {
namespace {

// A merge point's values combined over the replicas, as collective ops of the traced program.
class CollectiveValues final : public distribute::MergedValues {
 public:
  CollectiveValues(const std::vector<Tensor>& values, int replicas) : values_(values), replicas_(replicas) {}
  std::vector<Tensor> sum() const override {
    std::vector<Tensor> out;
    out.reserve(values_.size());
    for (const Tensor& v : values_) out.push_back(v.defined() ? ops::cross_replica_sum(v, replicas_) : Tensor());
    return out;
  }
  Tensor concat(std::size_t index) const override {
    const Tensor& v = values_.at(index);
    return v.defined() ? ops::all_gather(v, replicas_) : Tensor();
  }

 private:
  const std::vector<Tensor>& values_;
  int replicas_;
};

// What merge_call does in the traced replica: no waiting, the merge function traced on collectives.
class CollectiveMerges final : public distribute::MergeTracer {
 public:
  explicit CollectiveMerges(int replicas) : replicas_(replicas) {}
  void merge(std::string_view /*what*/, std::vector<Tensor> values, const distribute::MergeFn& fn) const override {
    fn(CollectiveValues(values, replicas_));
  }

 private:
  int replicas_;
};

// Hands each replica that runs an executor set (and arena) that no running replica holds: host
// memory grows with the replicas that run at once (the strategy's threads), not with the replicas
// in sync. Which instance a replica gets changes nothing in its results.
class Instances {
 public:
  using Parts = std::vector<const Executor*>;
  explicit Instances(std::function<Parts(int instance)> get) : get_(std::move(get)) {}

  std::pair<int, Parts> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    int instance = made_;
    if (free_.empty()) {
      ++made_;
    } else {
      instance = free_.back();
      free_.pop_back();
    }
    return {instance, get_(instance)};
  }
  void give_back(int instance) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(instance);  // a stack: the instance freed last is reused first
  }

 private:
  std::function<Parts(int)> get_;
  std::mutex mutex_;
  std::vector<int> free_;
  int made_ = 0;
};

}  // namespace

ReplicatedFunction::ReplicatedFunction(std::vector<Variable> state, StateFn fn, std::string name,
                                       const distribute::Distribution& distribution, ReplicaDeviceMemory memory)
    : state_(std::move(state)),
      fn_(std::move(fn)),
      distribution_(distribution),
      memory_(std::move(memory)),
      programs_(std::move(name)) {
  if (!fn_) throw ValueError("jit::ReplicatedFunction '" + programs_.function_name() + "': the function is empty");
}

// A replica's device holds every state variable (weights, optimizer slots, metric state) and,
// while a part runs, that part's other inputs, its intermediates and its outputs.
void ReplicatedFunction::check_fits(const std::vector<const Executor*>& parts, const std::string& signature) const {
  if (memory_.limit <= 0) return;
  const Program& program = traced_.at(signature);
  std::int64_t state_bytes = 0;
  for (std::size_t j = 0; j < program.state_count; ++j)
    state_bytes += static_cast<std::int64_t>(state_[j].value().nbytes());
  const ReplicaStages& stages = program.stages;
  std::int64_t inputs = 0, intermediates = 0, outputs = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const MemoryPlan& plan = parts[p]->memory_plan();
    std::int64_t state_inputs = 0;
    for (const std::size_t slot : stages.parts[p].input_slots) {
      if (slot < program.state_count) state_inputs += static_cast<std::int64_t>(state_[slot].value().nbytes());
    }
    const std::int64_t own_inputs = plan.pinned_bytes - state_inputs;
    if (own_inputs + plan.arena_bytes + plan.output_bytes > inputs + intermediates + outputs) {
      inputs = own_inputs;
      intermediates = plan.arena_bytes;
      outputs = plan.output_bytes;
    }
  }
  const std::int64_t needed = state_bytes + inputs + intermediates + outputs;
  if (needed <= memory_.limit) return;
  throw ResourceExhaustedError(
      "ResourceExhausted: '" + name() + "' for " + signature + " needs " + format_bytes(needed) +
      " per replica (state " + format_bytes(state_bytes) + ", then at its peak inputs " + format_bytes(inputs) +
      ", intermediates " + format_bytes(intermediates) + ", outputs " + format_bytes(outputs) + ") but " +
      memory_.device + " has " + format_bytes(memory_.limit) +
      "; use a smaller global batch (it is split over the replicas), shorter sequences or a smaller model");
}

std::vector<Graph> ReplicatedFunction::trace(const Args& args, const std::string& signature) {
  // The collectives combine every replica in sync, over all workers: their shapes say so.
  const int n = distribution_.num_replicas_in_sync();
  const CollectiveMerges merges(n);
  StateTrace traced;
  try {
    traced = trace_with_state(state_, args, [&](const Args& symbolic) {
      // One replica runs as the caller, with no replica context: its merge points run at once.
      std::optional<distribute::ReplicaScope> as_replica;
      if (n > 1) {
        as_replica.emplace(distribute::ReplicaContext{.replica_id = 0,
                                                      .num_replicas = replicas(),
                                                      .id = symbolic.at("replica_id"),
                                                      .distribution = &distribution_,
                                                      .merge_tracer = &merges});
      }
      return fn_(symbolic);
    });
  } catch (const JitError& e) {
    // A trace's errors (rule 1: a value read on the host) name the step being compiled.
    throw JitError("compiling '" + name() + "' on " + std::to_string(n) + (n == 1 ? " replica: " : " replicas: ") +
                   e.what());
  }
  state_ = std::move(traced.state);
  const Graph as_traced = n > 1 && dump_directory() ? traced.graph : Graph();
  if (n > 1) replica_step_pipeline(n).run(traced.graph);
  Program program{.stages = split_at_collectives(traced.graph, state_.size(), n, name()),
                  .state_count = state_.size(),
                  .updated = std::move(traced.updated)};
  if (program.stages.stages.size() > 1) {
    logging::get("kestrel.jit")->info("'{}' runs on {} replicas in stages: {}", name(), n, program.stages.to_string());
    if (profiling()) {
      program.collectives_profile = std::make_unique<ProgramProfiler>(
          "'" + name() + "' #" + std::to_string(compile_count() + 1) + " collectives for " + signature,
          profiled_collectives(program.stages, n));
    }
  }
  if (const std::optional<std::string> dir = dump_directory(); dir && program.stages.parts.size() > 1) {
    // As traced, collectives included (each part's own dumps show the rewrites); a program of one
    // part is dumped under this name by the cache.
    dump_graph(as_traced, *dir, name(), compile_count() + 1, "traced");
  }
  std::vector<Graph> graphs;
  for (ReplicaStages::Part& part : program.stages.parts) graphs.push_back(std::move(part.graph));
  traced_[signature] = std::move(program);
  return graphs;
}

std::vector<Tensor> ReplicatedFunction::operator()(const Args& args, const std::string& key) {
  return (*this)(std::vector<Args>{args}, key).at(0);
}

std::vector<std::vector<Tensor>> ReplicatedFunction::operator()(const std::vector<Args>& per_replica,
                                                                const std::string& key) {
  const int n = replicas();
  if (static_cast<int>(per_replica.size()) != n) {
    throw ValueError("jit::ReplicatedFunction '" + name() + "': " + std::to_string(per_replica.size()) +
                     " replicas' arguments for the " + std::to_string(n) + " replicas of " + distribution_.name());
  }
  std::vector<Args> args = per_replica;
  const int first_id = distribution_.first_local_replica();
  for (std::size_t r = 0; distribution_.num_replicas_in_sync() > 1 && r < args.size(); ++r) {
    // Each replica's id in sync, made once: a steady step allocates nothing for them.
    if (replica_ids_.size() <= r) {
      replica_ids_.push_back(Tensor::scalar(static_cast<double>(first_id + static_cast<int>(r)), DType::int64));
    }
    if (!args[r].emplace("replica_id", replica_ids_[r]).second) {
      throw ValueError("jit::ReplicatedFunction '" + name() + "': 'replica_id' is its own argument; rename yours");
    }
  }
  const std::string signature = signature_of_args(name(), args[0], key);
  for (std::size_t r = 1; r < args.size(); ++r) {
    if (signature_of_args(name(), args[r], key) != signature) {
      throw ShapeError("jit::ReplicatedFunction '" + name() + "': replica " + std::to_string(r) + " has arguments " +
                       signature_of_args(name(), args[r], key) + " but replica 0 has " + signature +
                       "; every replica runs one program, so their shards must have one shape");
    }
  }
  // Compiled (once) here, on the calling thread; the replicas only run it.
  const auto trace_once = [&] { return trace(args[0], signature); };
  const std::int64_t compiles_before = programs_.compile_count();
  const std::vector<const Executor*> first = programs_.get_parts(signature, trace_once);
  if (programs_.compile_count() != compiles_before) {
    check_fits(first, signature);
    // An instance for every replica that can run at once (the intra-op pool's threads), made now:
    // which step first runs that many replicas together is the threads' timing.
    for (int instance = 1; instance < std::min(n, num_threads()); ++instance) {
      programs_.get_parts(signature, trace_once, instance);
    }
  }
  Program& program = traced_.at(signature);
  planned_bytes_ = 0;
  for (const auto& part : first) planned_bytes_ = std::max(planned_bytes_, part->planned_bytes());

  // A variable's buffer can take its new value in place when nothing else holds it (asked before
  // the run takes its own handles); a value the user still holds keeps its data.
  std::vector<Tensor> state;
  std::vector<bool> donatable;
  for (std::size_t j = 0; j < program.state_count; ++j) {
    donatable.push_back(state_[j].stored_value().is_sole_owner());
    state.push_back(state_[j].stored_value());
  }
  std::vector<std::vector<Tensor>> arguments(args.size());
  for (std::size_t r = 0; r < args.size(); ++r) {
    for (const auto& entry : args[r]) arguments[r].push_back(entry.second);
  }
  StagedRun run(program.stages, distribution_, program.buffers, program.state_count, program.collectives_profile.get());
  run.start(std::move(state), std::move(donatable), arguments);
  arguments.clear();
  // (Instance 0 is the program fetched above: asking the cache again would count another call.)
  Instances instances(
      [&](int instance) { return instance == 0 ? first : programs_.get_parts(signature, trace_once, instance); });
  run.run_stages(first, [&](const std::function<void(const std::vector<const Executor*>&)>& fn) {
    const auto [instance, parts] = instances.take();
    try {
      fn(parts);
    } catch (...) {
      instances.give_back(instance);
      throw;
    }
    instances.give_back(instance);
  });

  const std::vector<std::size_t>& output_slots = program.stages.output_slots;
  for (std::size_t k = 0; k < program.updated.size(); ++k) {
    state_[program.updated[k]].assign(run.value(output_slots[k], 0));
  }
  std::vector<std::vector<Tensor>> outputs(args.size());
  for (std::size_t r = 0; r < args.size(); ++r) {
    for (std::size_t k = program.updated.size(); k < output_slots.size(); ++k) {
      outputs[r].push_back(run.value(output_slots[k], r));
    }
  }
  return outputs;
}

}  // namespace kestrel::jit
