// SparseCrossReplicaSum ("sparse_cross_replica_sum"): a replica step's all-reduce of an embedding
// gradient becomes an all-gather of the rows it touches, as TF all-gathers IndexedSlices instead of
// summing them dense.
//
//   jit::SparseCrossReplicaSum sparse(8);
//   sparse.run(graph);   // then DCE, then split_at_collectives
//   // before: %5 = scatter_add(%ids, %rows) {shape=[8192,128], axis=0}   %6 = cross_replica_sum(%5)
//   // after:  %7 = all_gather(%ids)   %8 = all_gather(%rows)   %9 = scatter_add(%7, %8) {shape=[8192,128], axis=0}
//
// An embedding's gradient is a scatter_add of a few rows into a table of zeros. Summed dense, every
// replica zeroes and fills its own table and the all-reduce reads all of them: for BERT-tiny's
// 8192-row vocabulary on 8 replicas, 8 tables of 4 MiB for 512 rows of updates each. Gathered,
// the replicas exchange only their indices and rows, and one scatter_add builds the sum once, in
// the program's shared part. Sums of rows with one index then accumulate in the order one replica
// would add them over the whole global batch (replica 0's rows first), where the dense path added
// each replica's partial sums: equal up to float rounding, and bitwise reproducible run to run.
//
// Rewritten, where each intermediate has no other reader:
//   cross_replica_sum(scatter_add(ids, rows))      -> scatter_add(all_gather(ids), all_gather(rows))
//   cross_replica_sum(dense + scatter_add(...))    -> cross_replica_sum(dense) + scatter_add(gathers)
// The second is a tied embedding (GPT's output projection shares the token table): its dense part
// still sums dense, its lookups gather. Only scatters along axis 0 (the axis all_gather joins) with
// indices of rank >= 1, and only where a replica's rows are fewer elements than the table, so the
// gathered rows of every replica never outweigh the dense tables they replace.
//
// It runs on the whole traced step, before split_at_collectives, and leaves the replaced ops dead
// for the DCE that follows it (a dead collective would still be performed).
#pragma once

#include <string>

#include "framework/jit/pass.h"

namespace kestrel::jit {

class SparseCrossReplicaSum final : public Pass {
 public:
  /// `replicas`: the replicas in sync the step's collectives combine.
  explicit SparseCrossReplicaSum(int replicas) : replicas_(replicas) {}
  std::string name() const override { return "sparse_cross_replica_sum"; }
  /// Applies the rewrites above; true when any applied.
  bool run(Graph& graph) override;

 private:
  int replicas_;
};

}  // namespace kestrel::jit
