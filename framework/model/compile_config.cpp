#include "framework/model/compile_config.h"

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/losses/serialization.h"
#include "framework/metrics/serialization.h"
#include "framework/model/model.h"
#include "framework/optimizers/serialization.h"

namespace kestrel {
namespace {

nlohmann::json metrics_config(const std::vector<MetricArg>& metrics) {
  if (metrics.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (const MetricArg& metric : metrics) {
    out.push_back(metric.name().empty() ? metrics::serialize(*metric) : nlohmann::json(metric.name()));
  }
  return out;
}

std::vector<MetricArg> metrics_from_config(const nlohmann::json& config, const std::string& loss_name) {
  std::vector<MetricArg> out;
  if (config.is_null()) return out;
  for (const nlohmann::json& metric : config) {
    if (metric.is_string()) {
      out.emplace_back(metric.get<std::string>());  // resolved against the loss by compile, as given
    } else {
      out.emplace_back(metrics::deserialize(metric, loss_name));
    }
  }
  return out;
}

}  // namespace

nlohmann::json compile_config(const Model& model) {
  if (!model.compiled()) {
    throw ValueError("model '" + model.name() + "' is not compiled, so it has no compile config");
  }
  const CompileOptions& options = model.compile_options();
  return {{"optimizer", optimizers::serialize(*model.optimizer())},
          {"loss", options.loss ? losses::serialize(*options.loss) : nlohmann::json(nullptr)},
          {"loss_weights", nullptr},
          {"metrics", metrics_config(options.metrics)},
          {"weighted_metrics", metrics_config(options.weighted_metrics)},
          {"run_eagerly", options.run_eagerly},
          {"steps_per_execution", options.steps_per_execution},
          {"jit_compile", options.jit_compile}};
}

CompileOptions compile_options_from_config(const nlohmann::json& config, const std::string& what) {
  using serialization::optional;
  const std::string where = what + ", compile_config";
  if (config.contains("loss_weights") && !config.at("loss_weights").is_null()) {
    throw ValueError(where + ": loss_weights is " + config.at("loss_weights").dump() +
                     ", and Kestrel's models have one output and one loss");
  }
  CompileOptions options;
  options.optimizer = optimizers::deserialize(serialization::required<nlohmann::json>(config, "optimizer", where));
  std::string loss_name;
  if (config.contains("loss") && !config.at("loss").is_null()) {
    options.loss = losses::deserialize(config.at("loss"));
    loss_name = options.loss->name();
  }
  options.metrics = metrics_from_config(config.value("metrics", nlohmann::json()), loss_name);
  options.weighted_metrics = metrics_from_config(config.value("weighted_metrics", nlohmann::json()), loss_name);
  options.run_eagerly = optional<bool>(config, "run_eagerly", false, where);
  options.steps_per_execution = optional<int>(config, "steps_per_execution", 1, where);
  // Keras's default is "auto" (XLA where the backend supports it); Kestrel compiles when asked to.
  const bool auto_jit = config.contains("jit_compile") && config.at("jit_compile") == "auto";
  options.jit_compile = !auto_jit && optional<bool>(config, "jit_compile", false, where);
  return options;
}

}  // namespace kestrel
