#include "framework/model/compile_config.h"

#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/serialization.h"
#include "framework/metrics/serialization.h"
#include "framework/model/model.h"
#include "framework/optimizers/serialization.h"

namespace kestrel {
namespace {

using Config = nlohmann::json;

Config loss_config(const LossArg& loss) { return loss ? losses::serialize(*loss) : Config(nullptr); }

// The one loss, or a dict of them by output name. Keras 3 reads a dict only with an entry for
// every output, so every output of `outputs` (the model's, several) gets one: null for an output
// compiled without a loss, and the one loss for each when loss weights need a dict beside it.
Config loss_config(const PerOutput<LossArg>& loss, const std::vector<std::string>& outputs, bool weighted) {
  if (!loss.by_output() && (outputs.empty() || !weighted)) return loss_config(loss.all());
  Config out = Config::object();
  for (const std::string& output : outputs) {
    const auto given = loss.per_output().find(output);
    out[output] = !loss.by_output()                  ? loss_config(loss.all())
                  : given != loss.per_output().end() ? loss_config(given->second)
                                                     : Config(nullptr);
  }
  return out;
}

Config metric_list_config(const std::vector<MetricArg>& metrics) {
  Config out = Config::array();
  for (const MetricArg& metric : metrics) {
    out.push_back(metric.name().empty() ? metrics::serialize(*metric) : Config(metric.name()));
  }
  return out;
}

// The metrics' list (null when there are none), or a dict of lists by output name.
Config metrics_config(const PerOutput<std::vector<MetricArg>>& metrics) {
  if (!metrics.by_output()) return metrics.all().empty() ? Config(nullptr) : metric_list_config(metrics.all());
  Config out = Config::object();
  for (const auto& [output, list] : metrics.per_output()) out[output] = metric_list_config(list);
  return out;
}

// A dict with every output's weight (1 for those not given), as Keras 3 indexes it by each output.
Config loss_weights_config(const std::map<std::string, double>& loss_weights, const std::vector<std::string>& outputs) {
  if (loss_weights.empty()) return nullptr;
  Config out = Config::object();
  for (const std::string& output : outputs) {
    const auto given = loss_weights.find(output);
    out[output] = given != loss_weights.end() ? given->second : 1.0;
  }
  return out;
}

// A compile option given per output, as Keras takes it: a dict by output name (a Keras object
// is a dict too, but has a class_name), or for a model of several outputs a list with an entry
// per output, in output order. nullopt when the value is for the whole model.
std::optional<std::map<std::string, Config>> values_by_output(const Config& value,
                                                              const std::vector<std::string>& output_names,
                                                              const std::string& where, const char* option) {
  std::map<std::string, Config> out;
  if (value.is_object() && !value.contains("class_name")) {
    for (const auto& [output, entry] : value.items()) out.emplace(output, entry);
    return out;
  }
  if (!value.is_array() || output_names.empty()) return std::nullopt;
  if (value.size() != output_names.size()) {
    throw ValueError(where + ": " + option + " is a list of " + std::to_string(value.size()) + " for a model of " +
                     std::to_string(output_names.size()) + " outputs (" + in_quotes(output_names) +
                     "); give one entry per output, in that order, or a dict by output name");
  }
  for (std::size_t i = 0; i < value.size(); ++i) out.emplace(output_names[i], value[i]);
  return out;
}

// A model of one output takes a dict or list of one entry as that entry, as Keras flattens it.
Config single_entry(const Config& value) {
  if (value.is_object() && !value.contains("class_name") && value.size() == 1) return value.begin().value();
  if (value.is_array() && value.size() == 1) return value[0];
  return value;
}

LossArg loss_from_config(const Config& config) {
  if (config.is_null()) return {};
  return LossArg(losses::deserialize(config));
}

PerOutput<LossArg> losses_from_config(const Config& config, const std::vector<std::string>& output_names,
                                      const std::string& where) {
  if (output_names.empty()) {
    const Config loss = single_entry(config);
    if (loss.is_object() && !loss.contains("class_name")) {
      throw ValueError(where + ": loss is " + config.dump().substr(0, 200) +
                       ", losses by output name, and the model has one output; give it one loss");
    }
    return loss_from_config(loss);
  }
  const auto by_output = values_by_output(config, output_names, where, "loss");
  if (!by_output) return loss_from_config(config);  // one loss for every output
  std::map<std::string, LossArg> out;
  for (const auto& [output, entry] : *by_output) out.emplace(output, loss_from_config(entry));
  return out;
}

std::string loss_name_of(const PerOutput<LossArg>& loss, const std::string& output) {
  if (!loss.by_output()) return loss.all() ? loss.all()->name() : "";
  const auto found = loss.per_output().find(output);
  return found != loss.per_output().end() && found->second ? found->second->name() : "";
}

// One output's metrics: a list (Keras 2 nested it in lists, which are flattened), one metric, or null.
void add_metrics(const Config& config, const std::string& loss_name, std::vector<MetricArg>& out) {
  if (config.is_null()) return;
  if (config.is_array()) {
    for (const Config& entry : config) add_metrics(entry, loss_name, out);
  } else if (config.is_object() && !config.contains("class_name")) {
    for (const auto& [output, entry] : config.items()) add_metrics(entry, loss_name, out);
  } else if (config.is_string()) {
    out.emplace_back(config.get<std::string>());  // resolved against the loss by compile, as given
  } else {
    out.emplace_back(metrics::deserialize(config, loss_name));
  }
}

PerOutput<std::vector<MetricArg>> metrics_from_config(const Config& config, const PerOutput<LossArg>& loss,
                                                      const std::vector<std::string>& output_names,
                                                      const std::string& where, const char* option) {
  if (config.is_null()) return {};
  if (!output_names.empty()) {
    const auto by_output = values_by_output(config, output_names, where, option);
    if (!by_output) {
      throw ValueError(where + ": " + option + " is " + config.dump().substr(0, 200) + " for a model of " +
                       std::to_string(output_names.size()) + " outputs (" + in_quotes(output_names) +
                       "); give a dict of lists by output name, or a list with one entry per output");
    }
    std::map<std::string, std::vector<MetricArg>> out;
    for (const auto& [output, entry] : *by_output) {
      std::vector<MetricArg> list;
      add_metrics(entry, loss_name_of(loss, output), list);
      if (!list.empty()) out.emplace(output, std::move(list));  // Keras's null: no metrics for that output
    }
    return out;
  }
  std::vector<MetricArg> out;
  add_metrics(config, loss_name_of(loss, ""), out);
  return out;
}

double loss_weight_from_config(const Config& value, const std::string& where) {
  if (!value.is_number()) {
    throw ValueError(where + ": a loss weight must be a number, got " + value.dump());
  }
  return value.get<double>();
}

std::map<std::string, double> loss_weights_from_config(const Config& config,
                                                       const std::vector<std::string>& output_names,
                                                       const std::string& where) {
  std::map<std::string, double> out;
  if (config.is_null()) return out;
  if (output_names.empty()) {
    // Kestrel weighs the losses of a model of several outputs; one loss at weight 1 is the same.
    const Config weight = single_entry(config);
    if (weight.is_number() && weight.get<double>() == 1.0) return out;
    throw ValueError(where + ": loss_weights is " + config.dump() +
                     " for a model of one output, and Kestrel weighs only the losses of several outputs; load "
                     "with compile = false and compile the model with the loss scaled as you need");
  }
  const auto by_output = values_by_output(config, output_names, where, "loss_weights");
  if (!by_output) {
    throw ValueError(where + ": loss_weights is " + config.dump() + " for a model of " +
                     std::to_string(output_names.size()) + " outputs (" + in_quotes(output_names) +
                     "); give a dict by output name, or a list with one weight per output");
  }
  for (const auto& [output, weight] : *by_output) out.emplace(output, loss_weight_from_config(weight, where));
  return out;
}

}  // namespace

Config compile_config(const Model& model) {
  if (!model.compiled()) {
    throw ValueError("model '" + model.name() + "' is not compiled, so it has no compile config");
  }
  const CompileOptions& options = model.compile_options();
  Config config = Config::object();
  config["optimizer"] = optimizers::serialize(*model.optimizer());
  const std::vector<std::string> outputs = model.output_names();
  config["loss"] = loss_config(options.loss, outputs, !options.loss_weights.empty());
  config["loss_weights"] = loss_weights_config(options.loss_weights, outputs);
  config["metrics"] = metrics_config(options.metrics);
  config["weighted_metrics"] = metrics_config(options.weighted_metrics);
  config["run_eagerly"] = options.run_eagerly;
  config["steps_per_execution"] = options.steps_per_execution;
  config["jit_compile"] = options.jit_compile;
  return config;
}

CompileOptions compile_options_from_config(const Config& config, const std::vector<std::string>& output_names,
                                           const std::string& what) {
  using serialization::optional;
  const std::string where = what + ", compile_config";
  CompileOptions options;
  options.optimizer = optimizers::deserialize(serialization::required<Config>(config, "optimizer", where));
  options.loss = losses_from_config(config.value("loss", Config()), output_names, where);
  options.loss_weights = loss_weights_from_config(config.value("loss_weights", Config()), output_names, where);
  options.metrics =
      metrics_from_config(config.value("metrics", Config()), options.loss, output_names, where, "metrics");
  options.weighted_metrics = metrics_from_config(config.value("weighted_metrics", Config()), options.loss, output_names,
                                                 where, "weighted_metrics");
  options.run_eagerly = optional<bool>(config, "run_eagerly", false, where);
  options.steps_per_execution = optional<int>(config, "steps_per_execution", 1, where);
  // Keras's default is "auto" (XLA where the backend supports it); Kestrel compiles when asked to.
  const bool auto_jit = config.contains("jit_compile") && config.at("jit_compile") == "auto";
  options.jit_compile = !auto_jit && optional<bool>(config, "jit_compile", false, where);
  return options;
}

}  // namespace kestrel
