// FunctionalGraph: the layer calls a Functional model replays, from its Inputs to its outputs.
//
//   Tensor x = Input({784}, {.name = "pixels"});
//   Tensor y = layers::Dense(10)(layers::Dense(64, {.activation = "relu"})(x));
//   FunctionalGraph graph({x}, {}, {y}, {}, "model 'functional': ");
//   Outputs out = graph.run(Inputs(batch), /*training=*/false);   // one tensor
//
// Built by walking the Keras tensors' records (layers/keras_tensor.h) back from the outputs, it
// holds the calls in an order where each comes after the calls it reads, and checks that the
// outputs are reached from the inputs alone and that every input is used. A graph of several
// outputs gives them named: by the keys it was given (Keras's dict of outputs), else by the
// layers that make them (Keras's output_names for a list).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/layers/keras_tensor.h"
#include "framework/model/inputs.h"

namespace kestrel {

class FunctionalGraph {
 public:
  /// inputs are Input() tensors. With keys (one per input), the model takes named data under those
  /// keys; without, it takes one tensor, or, with several inputs, data named by the Inputs' names.
  /// Outputs likewise: keyed (one key each), one, or a list named by the layers that make them.
  /// error_prefix starts every error ("model 'encoder' (Functional): ").
  FunctionalGraph(std::vector<Tensor> inputs, std::vector<std::string> keys, std::vector<Tensor> outputs,
                  std::vector<std::string> output_keys, std::string error_prefix);

  /// Runs the calls on data, in order: one tensor for one output, else a tensor per output name.
  Outputs run(const Inputs& data, bool training) const;

  /// The layers in the order Keras lists them: the InputLayers, then each layer at its first call.
  std::vector<Layer*> layers() const;
  /// Keras's "Connected to" column for a layer: "dense[0][0]" for each Keras tensor each of its
  /// calls read (node index: which call of that layer made it; tensor index: always 0 here).
  std::vector<std::string> connected_to(const Layer& layer) const;
  /// True when the calls form one chain (each layer called once, on the previous one's output),
  /// the case where Keras's summary leaves out "Connected to".
  bool is_chain() const;

  /// How the model was given its inputs or outputs, which is how its config lists them.
  enum class Form { one, list, named };
  Form input_form() const { return input_form_; }
  Form output_form() const { return output_form_; }

  /// One recorded call and the Keras tensor it made, in the order the model runs them.
  struct Step {
    std::shared_ptr<const functional::Node> node;
    Tensor output;
  };
  const std::vector<Step>& steps() const { return steps_; }
  /// Which call of its layer, counted over this model's calls, made a Keras tensor of the model
  /// (0 for an Input): Keras's node index.
  int node_index(const Tensor& keras_tensor) const;

  const std::vector<Tensor>& inputs() const { return inputs_; }
  /// The key of each input's data (empty when the model takes one tensor).
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  /// The name of each output: its key, else the name of the layer that makes it (Keras's output_names).
  const std::vector<std::string>& output_names() const { return output_names_; }

 private:
  void add_steps_to(const Tensor& tensor, std::vector<const void*>& visiting);
  /// Sets the output form and names; throws when two outputs share a name.
  void name_outputs();
  Tensor input_data(const Inputs& data, std::size_t i) const;
  /// "dense_1[0][0]": which layer and which of its calls made this tensor.
  std::string tensor_label(const Tensor& keras_tensor) const;

  std::vector<Tensor> inputs_;
  std::vector<std::string> keys_;
  Form input_form_ = Form::one;
  std::vector<Tensor> outputs_;
  std::vector<std::string> output_names_;
  Form output_form_ = Form::one;
  std::string error_prefix_;
  std::vector<Step> steps_;
};

}  // namespace kestrel
