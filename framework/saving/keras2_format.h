// The Keras 2 weights layout (".h5"), as tf.keras's save_weights writes and reads it.
//
//   /                       attrs layer_names = [b"dense", b"dropout", b"dense_1"] (model.layers() order),
//                                 backend = b"tensorflow", keras_version
//   /dense                  attr weight_names = [b"dense/kernel:0", b"dense/bias:0"] (empty: no weights)
//   /dense/dense/kernel:0   the values, under the weight's name
//   /optimizer_weights      attr weight_names = [b"sgd/iteration:0", ...], datasets under those names
//
//   keras2::save_layers(file.root(), model);
//   keras2::save_optimizer(file.root(), *model.optimizer());
//   auto values = keras2::read_layers(file.root(), model, {.by_name = true});
//
// Lists of names longer than HDF5's 64,512-byte attribute limit are split into layer_names0,
// layer_names1, ..., as Keras does. Full-model files (weights under /model_weights) read too.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/core/variable.h"
#include "framework/model/model.h"
#include "framework/saving/hdf5_handles.h"
#include "framework/saving/read_values.h"

namespace kestrel::saving::keras2 {

/// The largest attribute Keras 2 writes in one piece (HDF5's object header limit).
inline constexpr std::size_t kAttributeLimit = 64512;
/// The Keras version the files declare: the Keras 2 layout, which Keras reads without conversion.
inline constexpr const char* kKerasVersion = "2.15.0";

/// Writes the model's layers: a weights file's root, or a full-model file's /model_weights.
void save_layers(const h5::Group& group, const Model& model);
/// Writes the optimizer's variables under group/optimizer_weights (a full-model file has it
/// beside /model_weights, a weights file in its root).
void save_optimizer(const h5::Group& group, const optimizers::Optimizer& optimizer);

/// Reads values for the model's weights (by order, or by name), checking counts and shapes;
/// nothing is assigned, so a failure leaves the model as it was.
Values read_layers(const h5::Group& root, const Model& model, const LoadWeightsOptions& options);

/// The file's optimizer values in saved order, or nullopt when it holds no optimizer state.
std::optional<std::vector<h5::Dataset>> optimizer_state(const h5::Group& root);

/// Writes a list of strings as one attribute, or as name0, name1, ... when it passes the limit.
void write_string_list(const h5::Object& object, const std::string& name, const std::vector<std::string>& values);
/// Reads a list written by write_string_list (or by Keras), whole or split; absent reads as empty.
std::vector<std::string> read_string_list(const h5::Object& object, const std::string& name);

}  // namespace kestrel::saving::keras2
