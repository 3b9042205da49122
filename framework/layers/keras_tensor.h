// Keras tensors: the symbolic values the Functional API builds a model from.
//
//   Tensor inputs = Input({784});                                       // layers/input_layer.h
//   Tensor hidden = layers::Dense(64, {.activation = "relu"})(inputs);  // a Keras tensor too
//   Model model(inputs, layers::Dense(10)(hidden));                     // replays the two calls
//
// A Keras tensor has a shape and a dtype but no data, and remembers the layer call that made it
// (Keras's Node): the layer, the Keras tensors it was called on, and how to call it again. A
// Functional model walks these records back from its outputs to its inputs, and replays them on
// real data. Shapes come from the jit's own tracing: the layer runs once on traced stand-ins of its
// inputs, which builds its weights and infers its output without computing anything.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

class Layer;

namespace functional {

/// Calls the layer on tensors (real ones when a model runs, traced ones while recording).
using LayerCall = std::function<Tensor(const std::vector<Tensor>& inputs, bool training)>;

/// One call of a layer on Keras tensors.
struct Node {
  Layer* layer = nullptr;
  /// The layer, when the call moved a temporary here; null when its owner keeps it alive.
  std::shared_ptr<Layer> kept;
  /// The Keras tensors it was called on, in order (none for an Input).
  std::vector<Tensor> inputs;
  /// For a model called on named Keras tensors, the name of each input; else empty.
  std::vector<std::string> input_keys;
  /// Called on a list of tensors (a merging layer), rather than on one.
  bool list = false;
  LayerCall call;
};

struct RecordOptions {
  bool list = false;
  std::vector<std::string> input_keys;
  /// How to call the layer; unset: on the one tensor, or on the list.
  LayerCall call;
};

/// True for a Keras tensor: a symbolic output of a layer call or an Input.
bool is_keras_tensor(const Tensor& tensor);
/// The call that made a Keras tensor; throws ValueError for any other tensor.
const std::shared_ptr<const Node>& history(const Tensor& keras_tensor);

/// Records `layer` called on Keras tensors and returns the Keras tensor of its output. The layer
/// runs once under a jit trace of its own to build and to infer the output's shape and dtype;
/// `kept` is the layer itself when the record must keep it alive. Throws ValueError when the
/// inputs mix Keras tensors with tensors holding data.
Tensor record_call(Layer& layer, std::shared_ptr<Layer> kept, std::vector<Tensor> inputs, RecordOptions options = {});

/// A new Keras tensor of this spec made by `node` (an Input's, or a recorded call's).
Tensor make_keras_tensor(const TensorSpec& spec, std::shared_ptr<const Node> node);

}  // namespace functional
}  // namespace kestrel
