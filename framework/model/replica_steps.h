// ReplicaSteps: a Model's train, test and predict steps run by a strategy's replicas (internal
// to Model; fit, evaluate and predict use it when their strategy has several replicas).
//
// Each global batch is cut into one shard per replica, and each replica's loss is scaled by its
// share of the global batch: the part of the global mean's count it holds (its real rows, or,
// under a label mask such as ignore_class, its tokens that count).
//
// Eagerly, every replica runs the model's own train_step, test_step or predict_step (overrides
// included) on its shard, each on its own thread, reading the one shared copy of every weight.
// They meet where the model's state changes (distribute::merge_call): Optimizer::apply sums
// their gradients in replica order and updates once, and the loss tracker and metrics are updated
// once from every replica's values. So 8 replicas at a global batch B train and report like 1 at
// batch B, padded language-model batches included.
//
// Under jit_compile the same steps (overrides included) are traced once into one program every
// replica runs (jit::ReplicatedFunction): the merge points become its collectives, and the
// update, loss tracker and metrics its shared part, run once after the all-reduce.
//
// The first batch of a fit / evaluate / predict sets the global batch size; it must divide by the
// replicas. A smaller last batch is padded to it and its padding masked (Batch::row_mask), so no
// sample is dropped and no replica idles.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "framework/distribute/distribution.h"
#include "framework/jit/replicated_function.h"
#include "framework/layers/weight_ties.h"
#include "framework/model/batch.h"
#include "framework/model/fit_options.h"

namespace kestrel {
class Model;
}  // namespace kestrel

namespace kestrel::detail {

class ReplicaSteps {
 public:
  /// `jit`: the replicas run one compiled program each (jit_compile), else eagerly.
  ReplicaSteps(Model& model, const distribute::Distribution& distribution, bool jit);
  ~ReplicaSteps();

  void train(const Batch& batch);
  void test(const Batch& batch);
  /// The outputs for the batch's real rows.
  Tensor predict(const Batch& batch);
  /// A new fit, evaluate or predict begins: its first batch sets the global batch size.
  void start_run() { rows_ = 0; }
  /// What the replicas' compiled programs cost (zero when eager).
  JitStats stats() const;

 private:
  /// The batch padded to the global batch size (set by the run's first batch, checked to divide
  /// by the replicas); `method` names the caller in errors.
  Batch padded_to_global(const Batch& batch, const char* method);
  /// Before the first step: builds the model (on a shard) and checks its weight ties, so the
  /// replicas see one variable per tie (see layers/weight_ties.h).
  void place_model(const Batch& shard);
  using Step = std::function<std::vector<Tensor>(const Batch& shard)>;
  /// Runs step on every replica's shard as one step of the replicas (each on its own thread,
  /// meeting at merge points), with the replica's loss scaled by shares[replica] (if given).
  void run_steps(const std::vector<Batch>& shards, const std::vector<double>& shares, const Step& step) const;
  /// Runs step compiled for every replica (made on first use, over the variables `state` gives),
  /// with the replica's loss scaled by shares[replica] (if given); each replica's outputs.
  std::vector<std::vector<Tensor>> run_compiled(std::unique_ptr<jit::ReplicatedFunction>& function, const char* name,
                                                const std::vector<Batch>& shards, const std::vector<double>& shares,
                                                const std::function<std::vector<Variable>()>& state, const Step& step);
  /// What a test step reads and updates: the weights and the metrics' state.
  std::vector<Variable> test_state() const;

  /// Compiled, evaluation at a global batch other than training's is a second program with memory
  /// of its own on every replica (the seeds' advice: evaluate at the training batch size). Warns
  /// once per batch size, with both programs' planned memory per replica.
  void warn_if_not_at_training_batch(std::int64_t rows);

  Model& model_;
  const distribute::Distribution& distribution_;
  bool jit_;
  std::int64_t rows_ = 0;
  std::int64_t trained_rows_ = 0;             // the global batch the latest training step ran at
  std::set<std::int64_t> warned_batches_;     // evaluation batch sizes already warned about
  layers::WeightTies ties_before_placement_;  // the model's ties when compiled
  bool placed_ = false;
  std::unique_ptr<jit::ReplicatedFunction> train_, test_, predict_;  // compiled, under jit_compile
};

}  // namespace kestrel::detail
