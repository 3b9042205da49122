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
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

class Layer;

namespace functional {

/// Calls the layer on tensors (real ones when a model runs, traced ones while recording).
using LayerCall = std::function<Tensor(const std::vector<Tensor>& inputs, bool training)>;

/// A call's keyword arguments, as Keras records them in a node's kwargs: Keras tensors by name
/// (MultiHeadAttention's attention_mask) and flags (use_causal_mask).
struct Keywords {
  /// The names the call's last tensors were passed under, in order.
  std::vector<std::string> tensors;
  std::vector<std::pair<std::string, bool>> flags;
  bool empty() const { return tensors.empty() && flags.empty(); }
};

/// One call of a layer on Keras tensors.
struct Node {
  Layer* layer = nullptr;
  /// The layer, when the call moved a temporary here; null when its owner keeps it alive.
  std::shared_ptr<Layer> kept;
  /// The Keras tensors it was called on, in order (none for an Input): the positional ones, then
  /// those passed by keyword.
  std::vector<Tensor> inputs;
  /// For a model called on named Keras tensors, the name of each input; else empty.
  std::vector<std::string> input_keys;
  /// Called on a list of tensors (a merging layer), rather than on one or several arguments.
  bool list = false;
  Keywords keywords;
  LayerCall call;

  /// How many of `inputs` were passed by position.
  std::size_t positional_count() const { return inputs.size() - keywords.tensors.size(); }
};

struct RecordOptions {
  bool list = false;
  std::vector<std::string> input_keys;
  Keywords keywords;
  /// How to call the layer; unset: on the one tensor, or on the list.
  LayerCall call;
};

/// The use_causal_mask flag among an attention call's keyword flags (false when absent). Keras
/// also records training, which the model passes at run time, and return_attention_scores, which
/// may only be false; any other flag is a ValueError starting with `who`.
bool use_causal_mask(const Keywords& keywords, const std::string& who);

/// A call read back from a Functional config, on Keras tensors: what Layer::call_recorded gets.
struct RecordedCall {
  /// The positional tensors (one, or a list when `list`, or several arguments).
  std::vector<Tensor> positional;
  bool list = false;
  /// For a model called on named tensors, the name of each positional tensor.
  std::vector<std::string> input_keys;
  /// The tensors passed by keyword, named by keywords.tensors.
  std::vector<Tensor> keyword_tensors;
  Keywords keywords;

  /// The keyword tensor named `name`, or an undefined tensor.
  Tensor keyword(const std::string& name) const;
  /// The flag named `name`, or `fallback`.
  bool flag(const std::string& name, bool fallback) const;
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
