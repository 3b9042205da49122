// The configs of a Keras 2 full-model ".h5" file (its root attributes model_config and
// training_config), converted from and to the Keras 3 configs the rest of Kestrel reads.
//
//   model_config    {"class_name": "Sequential", "config": {"name": ..., "layers": [
//                      {"class_name": "InputLayer", "config": {...}}, {"class_name": "Dense", ...}]}}
//   training_config {"loss": {"class_name": "SparseCategoricalCrossentropy", "config": {...}},
//                    "metrics": ["accuracy"], "loss_weights": null, "weighted_metrics": null, ...,
//                    "optimizer_config": {"class_name": "Adam", "config": {...}}}
//
// Writing follows Keras 3's legacy h5 writer: layers, the optimizer, losses and metrics are objects
// of class_name and config alone (a registered class's class_name is its registered name,
// "my_package>MyLayer"), and what they hold (initializers, dtype policies, schedules) stays in
// Keras 3's form. Reading takes that, and what tf.keras 2 wrote too: a layer's batch_input_shape,
// an axis as a list of one, optimizers named "Custom>Adam" with their jit_compile and
// is_legacy_optimizer keys, a loss reduction of "auto", and metrics as MeanMetricWrappers naming
// their functions. Losses, loss weights and metrics of a model of several outputs keep their
// structure (dicts by output name, or lists in output order, as tf.keras 2 kept its metrics one
// list per output), which compile_options_from_config places by the model's output names.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kestrel::saving::keras2 {

/// model_config for a model's Keras 3 object (serialization::serialize_layer's output).
nlohmann::json model_config_from_keras3(const nlohmann::json& model_object);
/// training_config for a model's Keras 3 compile config (compile_config(model)).
nlohmann::json training_config_from_keras3(const nlohmann::json& compile_config);

/// The Keras 3 object of the model a model_config describes; `what` names the file in errors.
nlohmann::json keras3_model_object(const nlohmann::json& model_config, const std::string& what);
/// The Keras 3 compile config a training_config describes; `what` names the file in errors.
nlohmann::json keras3_compile_config(const nlohmann::json& training_config, const std::string& what);

}  // namespace kestrel::saving::keras2
