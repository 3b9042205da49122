// ReplicaStages: the program every replica of a compiled step runs, split at its collectives.
//
// Traced, a replica's step is one graph in which the merge points are collective ops
// (ops/collective.h): the gradients' cross_replica_sum before the optimizer's update, the
// predictions' all_gather before the metrics'. Replicas outnumber cores (8 on 2), so no replica
// may wait inside a kernel for the others: the program runs in stages instead. Stage s runs its
// work for every replica, then the collectives that end it combine every replica's values, then
// stage s + 1 begins. A stage has up to two parts, each a graph compiled on its own:
//   - the shared part: ops that read only what every replica holds alike (state, constants and
//     collective results: the optimizer's update), run once instead of once per replica;
//   - the replica part: ops that read the replica's own arguments (its shard, its id), run by
//     every replica on that replica's values.
// An op that reads only state and constants, before any collective (a weight's transpose), is
// copied into every part that reads it, as each replica would compute it for itself.
//
// Values that cross parts live in slots: one tensor per replica or one shared. Slots [0, inputs)
// are the traced graph's inputs in order (the state, shared; then the arguments, per replica).
//
//   ReplicaStages stages = split_at_collectives(graph, state.size(), 8, "train_step");
//   for (const ReplicaStages::Stage& stage : stages.stages) ...   // shared part, replica part, collectives
//
// A step's new state must be the same on every replica: an aliased output (a variable's new
// value) computed from one replica's values alone is a JitError naming the variable. With one
// replica nothing is split: the whole graph is one replica part, which may update state.
//
// A sum of the replicas' products over their rows, a^T b, leaves the replica part as its two
// operands instead (Contraction): the stage's collectives multiply every replica's rows at once.
//
// Where a part writes a variable's new value and no later part reads the old one, the new value
// is aliased to the old one's input, so a run that donates the variable's buffer updates it in
// place.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "framework/jit/graph.h"

namespace kestrel::jit {

struct ReplicaStages {
  struct Part {
    Graph graph;                           ///< inputs: input_slots' values; outputs: output_slots'
    bool per_replica = false;              ///< run by every replica, else once
    std::vector<std::size_t> input_slots;  ///< where each graph input comes from
    std::vector<std::size_t> output_slots;
  };
  /// A cross_replica_sum of a product over the rows of each replica's own values, a^T b (a weight
  /// gradient: a layer's inputs against its outputs' gradient, over the shard's rows), taken as
  /// one product over every replica's rows joined: the same sum, in one deep product on every
  /// core rather than a shallow one per replica and a pass adding them up. A bfloat16 product
  /// widened to float32 before the sum (a mixed_bfloat16 kernel's gradient) is taken in float32
  /// straight from its bfloat16 operands.
  struct Contraction {
    std::size_t a_slot = 0;  ///< per replica: a [rows, m], or what a reshapes
    std::size_t b_slot = 0;  ///< per replica: b [rows, n], or what b reshapes
    TensorSpec a, b;         ///< one replica's a and b, as the product reads them
    TensorSpec product;      ///< [m, n], in the sum's dtype
    Shape sum_shape;         ///< the sum's shape: the product's, or a reshape of it
  };
  /// cross_replica_sum or all_gather of one slot's values over the replicas, into a shared slot;
  /// or, for a contraction, the product over the replicas' rows of its two slots.
  struct Collective {
    OpId op = OpId::cross_replica_sum;
    std::size_t input_slot = 0;  ///< unused by a contraction
    std::size_t output_slot = 0;
    std::optional<Contraction> contraction;
  };
  struct Stage {
    std::optional<std::size_t> shared_part;   ///< runs first (an index into parts)
    std::optional<std::size_t> replica_part;  ///< then on every replica
    std::vector<Collective> collectives;      ///< then these, over every replica's values
    std::vector<std::size_t> released_slots;  ///< read by no later stage nor output: freed after it
  };

  std::vector<bool> slot_per_replica;     ///< per slot
  std::vector<Part> parts;                ///< in the order they run
  std::vector<Stage> stages;              ///< in the order they run
  std::vector<std::size_t> output_slots;  ///< the traced graph's outputs, in order

  /// Ops over every part (each copy of a copied op counted), and collectives.
  std::int64_t num_ops() const;
  /// "stage 0: replica part (41 ops) -> cross_replica_sum x6 (4 as products over every replica's rows),
  /// all_gather x4; stage 1: shared part (30 ops)".
  std::string to_string() const;
};

/// Splits a traced replica step. `graph`'s first `num_state` inputs are state (shared by every
/// replica), the others the replica's arguments. Throws JitError naming `function` and the
/// variable when a new state value differs per replica.
ReplicaStages split_at_collectives(const Graph& graph, std::size_t num_state, int replicas,
                                   const std::string& function);

}  // namespace kestrel::jit
