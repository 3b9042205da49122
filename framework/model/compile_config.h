// A model's compile settings as Keras 3's get_compile_config() writes them, and back
// (compile_from_config): what a .keras archive's config.json holds under "compile_config".
//
//   {"optimizer": {"module": "keras.optimizers", "class_name": "Adam", "config": {...}, ...},
//    "loss": {"module": "keras.losses", "class_name": "SparseCategoricalCrossentropy", ...},
//    "loss_weights": null, "metrics": ["accuracy"], "weighted_metrics": null,
//    "run_eagerly": false, "steps_per_execution": 1, "jit_compile": false}
//
// A model of several outputs compiled per output has dicts by output name, as Keras's:
//
//   "loss": {"digit": {...SparseCategoricalCrossentropy...}, "size": {...MeanSquaredError...}},
//   "loss_weights": {"size": 0.5}, "metrics": {"digit": ["accuracy"]}
//
// and reading also takes Keras's lists in output order ("loss": [{...}, {...}]). The optimizer
// is written as the model holds it (its learning rate or schedule included); a metric given by
// name stays a name, as Keras keeps it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/model/compile_options.h"

namespace kestrel {

class Model;

/// The compiled model's settings; throws ValueError for a model not compiled.
nlohmann::json compile_config(const Model& model);

/// The options a compile config describes, for a model with these output_names (Model::output_names:
/// empty for one output), which place the values of Keras's per-output lists; `what` names the
/// file in errors.
CompileOptions compile_options_from_config(const nlohmann::json& config, const std::vector<std::string>& output_names,
                                           const std::string& what);

}  // namespace kestrel
