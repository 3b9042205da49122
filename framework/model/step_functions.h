// StepFunctions: a model's train, test and predict steps as fit, evaluate and predict call them —
// Keras's make_train_function, make_test_function and make_predict_function: distribute(jit ?
// compile(step) : step), made once by compile(). The loop calls train(batch) and knows nothing
// of modes; the default strategy is one replica.
//
// Every step runs the model's own train_step, test_step or predict_step (overrides included) on
// each replica's shard of the global batch, and each replica's loss is scaled by its share of it:
// the part of the global mean's count it holds (its real rows, or, under a label mask such as
// ignore_class, its tokens that count).
//
// Eagerly, the replicas run side by side, each on its own thread, reading the one shared copy of
// every weight, and meet where the model's state changes (distribute::merge_call):
// Optimizer::apply sums their gradients in replica order and updates once, and the loss tracker
// and metrics are updated once from every replica's values. Under jit_compile the same step is
// traced once into the program every replica runs (jit::ReplicatedFunction): the merge points
// become its collectives, and the update, loss tracker and metrics its shared part, run once after
// the all-reduce. So 8 replicas at a global batch B train and report like 1 at batch B, padded
// language-model batches included, eager or compiled.
//
// The first batch of a fit / evaluate / predict sets the global batch size; it must divide by the
// replicas. A smaller last batch is padded to it and its padding masked (Batch::row_mask), so no
// sample is dropped, no replica idles, and a compiled step replays its program.
//
// Over several workers, each step's batches come one of two ways (data::auto_shard): every worker
// has the global batch and keeps its replicas' rows (DATA), or each brings its own part of it,
// read from its own pipeline (FILE, OFF: `per_worker`), which its replicas share. Then the
// workers' first batches set the part's size, and the loss shares count every worker's rows.
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
namespace losses {
class Loss;
}  // namespace losses
}  // namespace kestrel

namespace kestrel::detail {

/// A global batch cut into one shard per replica.
struct SplitBatch {
  /// Padded to the global batch size; from a worker that reads its own pipeline, its part of it.
  Batch global;
  std::int64_t global_rows = 0;  ///< the global batch's rows, over every worker
  std::vector<Batch> shards;     ///< one per local replica
  /// Each replica's share of the global batch's mean loss (several replicas, train and test): the
  /// elements its mean divides by (real rows; the tokens that count, under a label mask such as
  /// ignore_class) over all replicas' ones. Scaling each replica's mean by it makes the replicas'
  /// sum the global batch's mean exactly, which a plain 1 / replicas does not when replicas count
  /// different numbers of elements.
  std::vector<double> shares;
};

/// A call's outputs: per step, per replica, the step's own outputs.
using StepOutputs = std::vector<std::vector<std::vector<Tensor>>>;

class StepFunctions {
 public:
  /// `jit`: the steps compile (jit_compile), else they run eagerly.
  StepFunctions(Model& model, const distribute::Distribution& distribution, bool jit);
  ~StepFunctions();

  /// One call runs a step on each batch in turn: compiled, as one program (steps_per_execution).
  /// `per_worker`: each worker brings its own part of each global batch (BatchSource::per_worker).
  void train(const std::vector<Batch>& batches, bool per_worker = false);
  void test(const std::vector<Batch>& batches, bool per_worker = false);
  /// The outputs for each batch's real rows: every worker's, in worker order.
  std::vector<Outputs> predict(const std::vector<Batch>& batches, bool per_worker = false);
  /// A new fit, evaluate or predict begins: its first batch sets the global batch size.
  void start_run() { rows_ = worker_rows_ = 0; }
  /// What the compiled programs cost (zero when eager).
  JitStats stats() const;

 private:
  using Step = std::function<std::vector<Tensor>(const Batch& shard)>;
  /// The batch padded to the global batch size (set by the run's first batch, checked to divide
  /// by the replicas; `method` names the caller in errors) and split; then, on the first call,
  /// the model is placed.
  /// `step`: the batch's place in its execution (steps_per_execution), whose shard buffers it reuses.
  /// `scaled`: the replicas' losses are scaled by their shares (train and test steps); the
  /// shares count the real rows, or, for a model of one loss, the elements its label mask keeps.
  SplitBatch split_global(const Batch& batch, std::size_t step, const char* method, bool scaled);
  /// This worker's part of a global batch padded to the part's size (set by the workers' first
  /// parts) and split over its replicas.
  SplitBatch split_worker_part(const Batch& part, std::size_t step, const char* method, bool scaled);
  std::vector<SplitBatch> split_each(const std::vector<Batch>& batches, const char* method, bool scaled,
                                     bool per_worker);
  /// Which rows of a step's outputs, joined over every worker, are real (a bool mask), when each
  /// worker brought its own part of the global batch, padded at its end.
  Tensor rows_every_worker_keeps(const SplitBatch& step) const;
  /// The batch with a row mask and, when short, padded with masked rows to `rows`. A batch that
  /// has a row mask keeps it (a worker's masked filler).
  Batch padded_to(const Batch& batch, std::int64_t rows);
  /// Each tensor of `padded` cut into `replicas` shards (into the buffers of this `step` of an
  /// execution), of which the `local` from `first` become the returned batches.
  std::vector<Batch> shards_of(const Batch& padded, std::size_t step, int replicas, int first, int local,
                               const std::string& where);
  /// Before the first step: builds the model (on a shard) and, with several replicas, checks its
  /// weight ties, so the replicas see one variable per tie (see layers/weight_ties.h).
  void place_model(const Batch& shard);
  /// Runs step on every replica's shard of each batch in turn, compiled as one program (the
  /// function is made on first use, over the variables `state` gives) or eagerly.
  StepOutputs run(std::unique_ptr<jit::ReplicatedFunction>& function, const char* name,
                  const std::vector<SplitBatch>& steps, const std::function<std::vector<Variable>()>& state,
                  const Step& step);
  /// One step of the replicas (each on its own thread, meeting at merge points), each with its loss
  /// scaled by its share.
  std::vector<std::vector<Tensor>> run_eagerly(const SplitBatch& parts, const Step& step) const;
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
  std::int64_t worker_rows_ = 0;  // the size of each worker's part, when each reads its own pipeline
  Tensor full_mask_;              // the row mask of a full batch: ones
  // Per step of an execution: each batch tensor's shards (by argument name), and each replica's
  // loss scale, written again every step (distribute::shard_rows reuses them).
  std::vector<std::map<std::string, std::vector<Tensor>>> shard_buffers_;
  std::vector<std::vector<Tensor>> loss_scales_;
  std::int64_t trained_rows_ = 0;             // the global batch the latest training step ran at
  std::set<std::int64_t> warned_batches_;     // evaluation batch sizes already warned about
  layers::WeightTies ties_before_placement_;  // the model's ties when compiled
  bool placed_ = false;
  std::unique_ptr<jit::ReplicatedFunction> train_, test_, predict_;  // compiled, under jit_compile
};

}  // namespace kestrel::detail
