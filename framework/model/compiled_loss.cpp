#include "framework/model/compiled_loss.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/distribute/replica_context.h"
#include "framework/model/partial_batch.h"
#include "framework/ops/elementwise.h"

namespace kestrel::detail {
namespace {

void require_output(const std::string& name, const std::vector<std::string>& output_names, const char* option,
                    const std::string& who) {
  if (output_names.empty()) {
    throw ValueError(who + " has one output, so compile's " + option + " cannot name output '" + name +
                     "'; give one value for the model");
  }
  if (std::find(output_names.begin(), output_names.end(), name) == output_names.end()) {
    throw ValueError(who + ": compile's " + option + " names output '" + name + "', which the model does not have; " +
                     "its outputs are " + in_quotes(output_names));
  }
}

}  // namespace

CompiledLoss::CompiledLoss(const PerOutput<LossArg>& loss, const std::map<std::string, double>& loss_weights,
                           const std::vector<std::string>& output_names, const std::string& who)
    : who_(who) {
  for (const auto& [name, weight] : loss_weights) require_output(name, output_names, "loss_weights", who);
  if (!loss.by_output()) {
    if (!loss.all()) return;
    if (output_names.empty()) {
      terms_.push_back({.output = "", .loss = loss.all().shared()});
      return;
    }
    // One loss for a model of several outputs applies to each of them, as in Keras.
    for (const std::string& name : output_names) terms_.push_back({.output = name, .loss = loss.all().shared()});
  } else {
    for (const auto& [name, arg] : loss.per_output()) {
      require_output(name, output_names, "loss", who);
      if (arg) terms_.push_back({.output = name, .loss = arg.shared()});
    }
  }
  for (Term& term : terms_) {
    const auto weight = loss_weights.find(term.output);
    if (weight != loss_weights.end()) term.weight = weight->second;
    if (terms_.size() > 1) {
      term.tracker = std::make_shared<metrics::Mean>(metrics::MeanOptions{.name = term.output + "_loss"});
    }
  }
}

std::vector<Variable> CompiledLoss::tracker_variables() const {
  std::vector<Variable> out;
  for (const Term& term : terms_) {
    if (!term.tracker) continue;
    const std::vector<Variable> state = term.tracker->variables();
    out.insert(out.end(), state.begin(), state.end());
  }
  return out;
}

losses::Loss* CompiledLoss::single() const {
  return terms_.size() == 1 && terms_.front().output.empty() ? terms_.front().loss.get() : nullptr;
}

std::vector<Tensor> CompiledLoss::per_output(const Batch& batch, const Outputs& y_pred) const {
  std::vector<Tensor> out;
  for (const Term& term : terms_) {
    if (term.output.empty()) {
      out.push_back(loss_of_real_rows(*term.loss, batch, y_pred));
      continue;
    }
    Batch one = batch;
    one.y = output_tensor(batch.y, term.output, "y", who_, "the loss");
    const Tensor& predicted = output_tensor(y_pred, term.output, "predictions", who_, "the loss");
    require_unmasked_under_replicas(term, one.y, predicted);
    out.push_back(loss_of_real_rows(*term.loss, one, predicted));
  }
  return out;
}

void CompiledLoss::require_unmasked_under_replicas(const Term& term, const Tensor& y, const Tensor& y_pred) const {
  // A replica's share of the global batch counts its real rows when the model has several
  // outputs; a loss that also leaves labels out (ignore_class) would average over other counts on
  // each replica, and the replicas' scaled losses would no longer add up to the global batch's.
  const distribute::ReplicaContext* replica = distribute::replica_context();
  if (replica == nullptr || replica->num_replicas_in_sync() <= 1 || !term.loss->mask(y, y_pred).defined()) return;
  throw ValueError(who_ + ": the loss of output '" + term.output + "' (" + term.loss->name() +
                   ") leaves some labels out (ignore_class), which a model of several outputs does not yet "
                   "support on several replicas; train on one replica, or give that output a loss without a "
                   "label mask");
}

Tensor CompiledLoss::total(const std::vector<Tensor>& per_output) const {
  Tensor total;
  for (std::size_t i = 0; i < per_output.size(); ++i) {
    const Tensor weighted = terms_[i].weight != 1.0 ? per_output[i] * terms_[i].weight : per_output[i];
    total = total.defined() ? total + weighted : weighted;
  }
  return total;
}

const Tensor& output_tensor(const Outputs& values, const std::string& output, const char* what, const std::string& who,
                            const char* reader) {
  if (output.empty()) return values.tensor();
  if (values.is_named() && values.named().count(output) != 0) return values[output];
  const std::string where = who + ", " + reader + " of output '" + output + "'";
  if (!values.is_named()) {
    throw ValueError(where + ": " + what + " is one tensor, but the model has several outputs; give " + what +
                     " named by output, e.g. {{\"" + output + "\", ...}, ...}");
  }
  throw ValueError(where + ": " + what + " has no '" + output + "' (it has " + in_quotes(values.names()) + ")");
}

}  // namespace kestrel::detail
