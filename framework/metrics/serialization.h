// Keras configs for metrics: the Keras objects a Keras 3 compile config holds, written and read
// back, and the helper the metrics' from_config read their keys with.
//
//   nlohmann::json auc = metrics::serialize(metrics::AUC({.curve = "PR"}));
//   // {"module": "keras.metrics", "class_name": "AUC", "registered_name": null,
//   //  "config": {"name": "auc", "dtype": "float32", "num_thresholds": 200, "curve": "PR", ...}}
//   std::shared_ptr<metrics::Metric> copy = metrics::deserialize(auc);   // same options, fresh state
//   metrics::deserialize("accuracy", "sparse_categorical_crossentropy");  // SparseCategoricalAccuracy
//
// A metric compiled by name stays that name in Keras's compile config ("metrics": ["accuracy",
// {AUC's object}]): write the string the user gave, not the metric it resolved to, and read it
// back as that string (or through deserialize with the loss, as compile resolves it). Reading is
// as strict as Keras: a key the class does not take is a ValueError naming the class and the
// key, and so is an option Kestrel lacks (top_k, multi_label, ...) set to a value that would
// change the result.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/metrics/metric.h"

namespace kestrel::metrics {

/// {"module": "keras.metrics", "class_name", "config": get_config(), "registered_name": null}.
/// Throws ValueError for a metric whose class is not one of Kestrel's (a MeanMetricWrapper of
/// one's own function, say): Keras could not read it back.
nlohmann::json serialize(const Metric& metric);
/// A metric from its Keras object, from Keras's object for a metric function ({"class_name":
/// "function", "config": "mean_squared_error"}), or from a bare name as metrics::get takes it,
/// "accuracy" resolved against `loss_name`.
std::shared_ptr<Metric> deserialize(const nlohmann::json& config, std::string_view loss_name = "");

/// The name from a metric's config (`default_name` when absent), after checking its keys (the
/// base's name and dtype, then `own_keys`) and that its dtype is float32 or null.
std::string metric_name_from_config(const nlohmann::json& config, const std::string& what,
                                    const std::vector<std::string_view>& own_keys, const std::string& default_name);

/// A class's options with the name read from `config` (metric_name_from_config) and its own
/// fields at their defaults, for from_config to fill in.
template <class Options>
Options metric_options_from_config(const nlohmann::json& config, const std::string& what,
                                   const std::vector<std::string_view>& own_keys) {
  Options o;
  o.name = metric_name_from_config(config, what, own_keys, o.name);
  return o;
}

}  // namespace kestrel::metrics
