// ReplicaSteps: a Model's train, test and predict steps split over a strategy's replicas
// (internal to Model; fit, evaluate and predict use it when their strategy has several replicas).
//
// Each global batch is cut into one shard per replica. The replicas run the forward and backward
// pass side by side on the strategy's workers, reading the one shared copy of every weight; their
// gradients, each of its replica's share of the global loss, are summed in replica order and the
// optimizer updates the weights once. A replica's share is the part of the global mean's count
// it holds: its real rows, or, under a label mask (ignore_class), its tokens that count. The loss
// tracker and metrics are updated once, from every replica's results, so 8 replicas at a global
// batch B train and report like 1 at batch B, padded language-model batches included.
//
// The first batch of a fit / evaluate / predict sets the global batch size; it must divide by the
// replicas. A smaller last batch is padded to it and its padding masked (Batch::row_mask), so no
// sample is dropped and no replica idles.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/distribute/distribution.h"
#include "framework/jit/replicated_function.h"
#include "framework/layers/weight_ties.h"
#include "framework/model/batch.h"
#include "framework/model/fit_options.h"
#include "framework/model/ordered_gradient_sum.h"

namespace kestrel {
class Model;
}  // namespace kestrel

namespace kestrel::detail {

/// What one replica's forward and backward pass give.
struct ReplicaResult {
  Tensor y_pred;
  Tensor loss;                    ///< the replica's own loss, before its scale
  std::vector<Tensor> gradients;  ///< of the scaled loss, for trainable_weights()
};

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
  /// Runs fn as every replica (with its ReplicaScope) on the strategy's workers.
  void for_each_replica(const std::function<void(int replica)>& fn) const;
  /// Each replica's outputs of `function` on its shard, compiled or eager, after `sum` took the
  /// gradients from outputs `gradients_from` on (when not null).
  std::vector<std::vector<Tensor>> run_replicas(std::unique_ptr<jit::ReplicatedFunction>& function, const char* name,
                                                const std::vector<jit::Args>& shards,
                                                const std::function<std::vector<Tensor>(const jit::Args&)>& body,
                                                OrderedGradientSum* sum = nullptr, std::size_t gradients_from = 0);

  static std::vector<jit::Args> shard_args(const std::vector<Batch>& shards);

  Model& model_;
  const distribute::Distribution& distribution_;
  bool jit_;
  std::int64_t rows_ = 0;
  layers::WeightTies ties_before_placement_;  // the model's ties when compiled
  bool placed_ = false;
  std::unique_ptr<jit::ReplicatedFunction> train_, test_, predict_;  // compiled, under jit_compile
  // Per compiled function: which of its body's outputs are defined (the program returns those).
  std::map<std::string, std::shared_ptr<std::vector<bool>>> defined_;
};

}  // namespace kestrel::detail
