// CompiledMetrics: the metrics compile() was given, each reading its output (Keras's
// CompileMetrics).
//
//   CompiledMetrics metrics(options.metrics, options.weighted_metrics, model.output_names(), loss, who);
//   distribute::merge_call("the metrics", metrics.values_of(batch, y_pred), [&](const auto& merged) {
//     metrics.update(merged);                      // every replica's rows, in replica order
//   });
//
// A model of one output takes a list of metrics; a model of several takes them per output name,
// and logs each as "<output>_<metric>" ("digit_accuracy"), as Keras does. A metric given by name
// ("accuracy") is resolved against its output's loss.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/distribute/merge_call.h"
#include "framework/metrics/metric.h"
#include "framework/model/batch.h"
#include "framework/model/compile_options.h"
#include "framework/model/compiled_loss.h"

namespace kestrel::detail {

class CompiledMetrics {
 public:
  CompiledMetrics() = default;
  /// Throws ValueError naming the model (`who`) for metrics given per output to a model of one
  /// output, a list given to a model of several, or an output name the model does not have.
  CompiledMetrics(const PerOutput<std::vector<MetricArg>>& plain, const PerOutput<std::vector<MetricArg>>& weighted,
                  const std::vector<std::string>& output_names, const CompiledLoss& loss, const std::string& who);

  /// The plain metrics, then the weighted ones.
  const std::vector<std::shared_ptr<metrics::Metric>>& metrics() const { return metrics_; }
  /// The name metric i is logged under: its own, after its output's name for several outputs.
  std::string log_name(std::size_t i) const;

  /// What a replica brings to the metrics' merge point: each output's y and predictions, then
  /// the sample weights and the row mask.
  std::vector<Tensor> values_of(const Batch& batch, const Outputs& y_pred) const;
  /// Updates every metric from the replicas' values_of, merged (plain metrics ignore sample
  /// weights, as in Keras; none counts padding rows).
  void update(const distribute::MergedValues& merged) const;

 private:
  std::vector<std::shared_ptr<metrics::Metric>> metrics_;
  std::vector<std::size_t> output_of_;  // per metric: its index in outputs_
  std::size_t weighted_from_ = 0;       // metrics_[weighted_from_..] are the weighted metrics
  std::vector<std::string> outputs_;    // the outputs metrics read ("" for a model of one output)
  std::string who_;
};

}  // namespace kestrel::detail
