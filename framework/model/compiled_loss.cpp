#include "framework/model/compiled_loss.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/model/partial_batch.h"
#include "framework/ops/elementwise.h"

namespace kestrel::detail {
namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + ("'" + name + "'");
  return out;
}

void require_output(const std::string& name, const std::vector<std::string>& output_names, const char* option,
                    const std::string& who) {
  if (output_names.empty()) {
    throw ValueError(who + " has one output, so compile's " + option + " cannot name output '" + name +
                     "'; give one value for the model");
  }
  if (std::find(output_names.begin(), output_names.end(), name) == output_names.end()) {
    throw ValueError(who + ": compile's " + option + " names output '" + name + "', which the model does not have; " +
                     "its outputs are " + name_list(output_names));
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
    if (!term.output.empty())
      term.tracker = std::make_shared<metrics::Mean>(metrics::MeanOptions{.name = term.output + "_loss"});
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
    const std::string who = who_ + ", the loss of output '" + term.output + "'";
    Batch one = batch;
    one.y = output_tensor(batch.y, term.output, "y", who);
    Tensor value = loss_of_real_rows(*term.loss, one, output_tensor(y_pred, term.output, "predictions", who));
    if (term.weight != 1.0) value = value * term.weight;
    out.push_back(value);
  }
  return out;
}

Tensor sum_of(const std::vector<Tensor>& losses) {
  Tensor total = losses.at(0);
  for (std::size_t i = 1; i < losses.size(); ++i) total = total + losses[i];
  return total;
}

const Tensor& output_tensor(const Outputs& values, const std::string& output, const char* what,
                            const std::string& who) {
  if (output.empty()) return values.tensor();
  if (!values.is_named()) {
    throw ValueError(who + ": " + what + " is one tensor, but the model has several outputs; give " + what +
                     " named by output, e.g. {{\"" + output + "\", ...}, ...}");
  }
  if (values.named().count(output) == 0) {
    std::string have;
    for (const auto& [key, value] : values.named()) have += (have.empty() ? "'" : ", '") + key + "'";
    throw ValueError(who + ": " + what + " has no '" + output + "' (it has " + have + ")");
  }
  return values[output];
}

}  // namespace kestrel::detail
