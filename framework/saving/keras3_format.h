// The Keras 3 weights layout (".weights.h5"), as keras.Model.save_weights writes and reads it.
//
//   /vars                                  the model's own weights (usually none)
//   /layers/dense/vars/0, /vars/1          a layer's own weights: trainable, then non-trainable
//   /layers/dense_1/vars/...               the next Dense child: groups count classes, not names
//   /layers/encoder/layers/dense/vars/...  a child's children, nested the same way
//   /layers/lstm/cell/vars/0, /1, /2       a child held under an attribute (Layer::child_attributes(),
//                                          Keras's self.cell): a group of that name, as Keras walks
//                                          attributes, numbered apart from the listed children
//   /optimizer/vars/0..N                   Optimizer::variables(): iteration, learning rate, slots
//
//   keras3::save(file.root(), model, model.optimizer());
//   auto values = keras3::read_layers(file.root(), model, {});
//
// Layers are matched by this structure, not by name; each layer's vars group carries attr name
// (the layer's name) for readers, as Keras writes it. bfloat16 values are stored as uint16 with attr dtype="bfloat16".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/core/variable.h"
#include "framework/model/model.h"
#include "framework/saving/hdf5_handles.h"
#include "framework/saving/read_values.h"

namespace kestrel::saving::keras3 {

/// Writes the model's weights, layer by layer, and, when optimizer is not null, its variables.
void save(const h5::Group& root, const Model& model, const optimizers::Optimizer* optimizer);

/// Reads values for every weight of the model, checking counts and shapes (skip_mismatch skips
/// a layer that does not fit, with a warning); nothing is assigned.
Values read_layers(const h5::Group& root, const Model& model, const LoadWeightsOptions& options);

/// The file's optimizer values in saved order, or nullopt when it holds no optimizer state.
std::optional<std::vector<h5::Dataset>> optimizer_state(const h5::Group& root);

/// The group paths of a layer's direct children, relative to its group: "layers/dense",
/// "layers/dense_1", "layers/layer_normalization", ... for listed children, the attribute ("cell")
/// for a child held under one.
std::vector<std::string> child_group_names(const Layer& layer);

}  // namespace kestrel::saving::keras3
