// StagedRun: one call of a replicated program (replica_stages.h) — its parts run stage by stage,
// its collectives performed by the strategy between them, its values kept in slots.
//
//   StagedRun run(stages, distribution, buffers, state_count);   // buffers: kept from call to call
//   run.start(state_values, donatable, per_replica_args);
//   run.run_stages(executors, with_free_instance);   // the shared parts' executors, a free instance's
//                                                    // (with a profiler: the collectives timed too)
//   run.value(stages.output_slots[k], replica);      // the program's outputs
//
// Buffers come back from call to call (StepBuffers): a slot is freed after its last reader into
// the buffers of the part output or collective that wrote it, and the next call's part or
// collective writes into them (Executor::run's `reused`, Distribution's `reused`) when nothing else
// holds them. A steady step of the replicas thus allocates nothing.
//
// A contraction (ReplicaStages::Contraction) multiplies every replica's rows of its two operands
// at once, in place: the replicas' buffers for a slot it reads are made one after another in one
// block (Buffer::allocate_consecutive), so the replicas' [rows, m] values are one
// [replicas * rows, m] matrix. Values that lie elsewhere (a replica's argument, say) are copied
// together first, into a buffer kept for the next call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "framework/distribute/distribution.h"
#include "framework/jit/executor.h"
#include "framework/jit/profile.h"
#include "framework/jit/replica_stages.h"

namespace kestrel::jit {

/// Buffers one call of a replicated program leaves for the next.
struct StepBuffers {
  std::vector<std::vector<std::vector<Tensor>>> part_outputs;  ///< [part][replica][output]
  std::vector<Tensor> collective_outputs;                      ///< per slot
  std::vector<Tensor> joined_rows;  ///< per slot: a contraction operand's rows copied together, when apart
};

class StagedRun {
 public:
  /// Calls its argument with the executors (one per part) of an instance no running replica holds.
  using WithFreeInstance = std::function<void(const std::function<void(const std::vector<const Executor*>&)>&)>;

  /// `collectives`, when given, times every collective into its profile, each at its index in
  /// profiled_collectives(stages, ...).
  StagedRun(const ReplicaStages& stages, const distribute::Distribution& distribution, StepBuffers& buffers,
            std::size_t state_count, ProgramProfiler* collectives = nullptr);

  /// The state's values (with, per variable, whether its buffer may take the new value in place)
  /// and each replica's arguments, in graph-input order after the state.
  void start(std::vector<Tensor> state, std::vector<bool> donatable, const std::vector<std::vector<Tensor>>& args);
  /// Every stage: its shared part once (on `shared_parts`' executor), its replica part on every
  /// replica (distribution.for_each_replica, each on a free instance's executor), then its
  /// collectives, then frees the slots no later stage reads.
  void run_stages(const std::vector<const Executor*>& shared_parts, const WithFreeInstance& with_free_instance);
  /// A slot's value for a replica (a shared slot's for every replica).
  const Tensor& value(std::size_t slot, std::size_t replica) const;

 private:
  Tensor& slot(std::size_t slot, std::size_t replica);
  void run_part(std::size_t part, const Executor& executor, std::size_t replica);
  /// The stage's collectives; `first` is the index of its first in the order they all run.
  void run_collectives(const ReplicaStages::Stage& stage, std::size_t first);
  /// Per-replica part outputs that contractions read, given consecutive buffers where they have none.
  void place_contraction_operands();
  Tensor contract(const ReplicaStages::Contraction& contraction, Tensor reused);
  /// Every replica's value of a per-replica slot, each read as `matrix` [rows, cols], as one
  /// [replicas * rows, cols] matrix, their rows in replica order.
  TensorView joined_rows(std::size_t slot, const TensorSpec& matrix);
  void release(const ReplicaStages::Stage& stage);

  const ReplicaStages& stages_;
  const distribute::Distribution& distribution_;
  StepBuffers& buffers_;
  std::size_t state_count_;
  ProgramProfiler* profiler_;
  std::size_t replicas_;
  std::vector<Tensor> shared_;                // per slot
  std::vector<std::vector<Tensor>> own_;      // per replica, per slot
  std::vector<bool> donatable_;               // per state variable
  std::vector<std::int64_t> producer_part_;   // per slot: the part whose output it is, or -1
  std::vector<std::size_t> producer_output_;  // ... and which output
};

/// The stages' collectives in the order they run, as a profile reports them: a contraction as the
/// matrix product over every replica's rows that it is ("matmul", "768 x 256 x 2048"), a sum or a
/// gather by its op's name.
std::vector<std::optional<ProfiledOp>> profiled_collectives(const ReplicaStages& stages, int replicas);

}  // namespace kestrel::jit
