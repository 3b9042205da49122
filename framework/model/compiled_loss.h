// CompiledLoss: the loss compile() was given, applied to a model's outputs (Keras's CompileLoss).
//
//   CompiledLoss loss(options.loss, options.loss_weights, model.output_names(), "model 'm'");
//   Tensor total = loss.total(batch, y_pred);      // every output's loss, weighted, summed
//
// A model of one output has one loss. A model of several outputs has one per output name: the
// one loss given for all, or each output's own (an output left out has none). Each is taken over
// the batch's real rows (detail::loss_of_real_rows), so padding rows never count.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/losses/loss.h"
#include "framework/metrics/mean.h"
#include "framework/model/batch.h"
#include "framework/model/compile_options.h"

namespace kestrel::detail {

class CompiledLoss {
 public:
  /// One output's loss and its weight in the total.
  struct Term {
    std::string output;  ///< the output's name; empty for a model of one output
    std::shared_ptr<losses::Loss> loss;
    double weight = 1.0;
    /// The epoch's mean of this output's loss, unweighted, logged as "<output>_loss" (as Keras 3
    /// does when several outputs have losses; null otherwise).
    std::shared_ptr<metrics::Mean> tracker;
  };

  CompiledLoss() = default;
  /// output_names: the model's (empty for one output). Throws ValueError naming the model (`who`)
  /// for a loss or weight given per output to a model of one output, or for an output name the
  /// model does not have (the message lists those it has).
  CompiledLoss(const PerOutput<LossArg>& loss, const std::map<std::string, double>& loss_weights,
               const std::vector<std::string>& output_names, const std::string& who);

  /// True when compile was given no loss.
  bool empty() const { return terms_.empty(); }
  /// The model's one loss; null for a model of several outputs or without a loss.
  losses::Loss* single() const;
  const std::vector<Term>& terms() const { return terms_; }

  /// Each term's loss over the batch's real rows, unweighted, in terms() order.
  std::vector<Tensor> per_output(const Batch& batch, const Outputs& y_pred) const;
  /// The model's loss: each term's value (per_output's) times its weight, summed.
  Tensor total(const std::vector<Tensor>& per_output) const;
  /// The per-output trackers' state (none for one output).
  std::vector<Variable> tracker_variables() const;

 private:
  /// Throws for a label-masked loss on a model of several outputs under several replicas.
  void require_unmasked_under_replicas(const Term& term, const Tensor& y, const Tensor& y_pred) const;

  std::vector<Term> terms_;
  std::string who_;
};

/// A structure's tensor for one output: the single tensor when `output` is empty, else the named one.
/// `what` ("y", "predictions"), `who` (the model) and `reader` ("the loss", "the metrics") name
/// them in the error for a missing output.
const Tensor& output_tensor(const Outputs& values, const std::string& output, const char* what, const std::string& who,
                            const char* reader);

}  // namespace kestrel::detail
