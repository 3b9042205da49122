#include "framework/model/compiled_metrics.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/model/partial_batch.h"

namespace kestrel::detail {

CompiledMetrics::CompiledMetrics(const PerOutput<std::vector<MetricArg>>& plain,
                                 const PerOutput<std::vector<MetricArg>>& weighted,
                                 const std::vector<std::string>& output_names, const CompiledLoss& loss,
                                 const std::string& who)
    : who_(who) {
  const auto loss_name = [&](const std::string& output) -> std::string {
    for (const CompiledLoss::Term& term : loss.terms()) {
      if (term.output == output) return term.loss->name();
    }
    return "";
  };
  const auto add = [&](const std::string& output, const std::vector<MetricArg>& args) {
    auto found = std::find(outputs_.begin(), outputs_.end(), output);
    if (found == outputs_.end()) found = outputs_.insert(outputs_.end(), output);
    for (const MetricArg& m : args) {
      metrics_.push_back(m ? m.shared() : metrics::get(m.name(), loss_name(output)).shared());
      output_of_.push_back(static_cast<std::size_t>(found - outputs_.begin()));
    }
  };
  const auto add_all = [&](const PerOutput<std::vector<MetricArg>>& given, const char* option) {
    if (!given.by_output()) {
      if (given.all().empty()) return;
      if (!output_names.empty()) {
        throw ValueError(who + " has " + std::to_string(output_names.size()) + " outputs; give compile's " + option +
                         " per output, e.g. {{\"" + output_names.front() + "\", {\"accuracy\"}}}");
      }
      add("", given.all());
      return;
    }
    for (const auto& [output, args] : given.per_output()) {
      if (std::find(output_names.begin(), output_names.end(), output) == output_names.end()) {
        throw ValueError(who + ": compile's " + option + " name output '" + output + "', which the model " +
                         (output_names.empty() ? std::string("does not have: it has one output; give a list")
                                               : "does not have; its outputs are " + in_quotes(output_names)));
      }
      add(output, args);
    }
  };
  add_all(plain, "metrics");
  weighted_from_ = metrics_.size();
  add_all(weighted, "weighted_metrics");
}

std::string CompiledMetrics::log_name(std::size_t i) const {
  const std::string& output = outputs_[output_of_[i]];
  return output.empty() ? metrics_[i]->name() : output + "_" + metrics_[i]->name();
}

std::vector<Tensor> CompiledMetrics::values_of(const Batch& batch, const Outputs& y_pred) const {
  std::vector<Tensor> values;
  for (const std::string& output : outputs_) {
    values.push_back(output_tensor(batch.y, output, "y", who_, "the metrics"));
    values.push_back(output_tensor(y_pred, output, "predictions", who_, "the metrics"));
  }
  values.push_back(batch.sample_weight);
  values.push_back(batch.row_mask);
  return values;
}

void CompiledMetrics::update(const distribute::MergedValues& merged) const {
  const std::size_t after_outputs = 2 * outputs_.size();
  const Tensor row_mask = merged.concat(after_outputs + 1);
  const Tensor weighted = weight_of_real_rows(merged.concat(after_outputs), row_mask);
  std::vector<Tensor> y, predicted;
  for (std::size_t k = 0; k < outputs_.size(); ++k) {
    y.push_back(merged.concat(2 * k));
    predicted.push_back(merged.concat(2 * k + 1));
  }
  for (std::size_t i = 0; i < metrics_.size(); ++i) {
    const std::size_t k = output_of_[i];
    metrics_[i]->update_state(y[k], predicted[k], i >= weighted_from_ ? weighted : row_mask);
  }
}

}  // namespace kestrel::detail
