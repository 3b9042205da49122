// FunctionalGraph: the layer calls a Functional model replays, from its Inputs to its output.
//
//   Tensor x = Input({784}, {.name = "pixels"});
//   Tensor y = layers::Dense(10)(layers::Dense(64, {.activation = "relu"})(x));
//   FunctionalGraph graph({x}, {}, y, "model 'functional': ");
//   Tensor out = graph.run(Inputs(batch), /*training=*/false);
//
// Built by walking the Keras tensors' records (layers/keras_tensor.h) back from the output, it
// holds the calls in an order where each comes after the calls it reads, and checks that the
// output is reached from the inputs alone and that every input is used.
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
  /// error_prefix starts every error ("model 'encoder' (Functional): ").
  FunctionalGraph(std::vector<Tensor> inputs, std::vector<std::string> keys, Tensor output, std::string error_prefix);

  /// Runs the calls on data, in order.
  Tensor run(const Inputs& data, bool training) const;

  /// The layers in the order Keras lists them: the InputLayers, then each layer at its first call.
  std::vector<Layer*> layers() const;
  /// Keras's "Connected to" column for a layer: "dense[0][0]" for each Keras tensor each of its
  /// calls read (node index: which call of that layer made it; tensor index: always 0 here).
  std::vector<std::string> connected_to(const Layer& layer) const;
  /// True when the calls form one chain (each layer called once, on the previous one's output),
  /// the case where Keras's summary leaves out "Connected to".
  bool is_chain() const;

  /// How the model was given its inputs, which is how its config lists them.
  enum class InputForm { one, list, named };
  InputForm input_form() const { return input_form_; }

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
  const Tensor& output() const { return output_; }

 private:
  void add_steps_to(const Tensor& tensor, std::vector<const void*>& visiting);
  Tensor input_data(const Inputs& data, std::size_t i) const;
  /// "dense_1[0][0]": which layer and which of its calls made this tensor.
  std::string tensor_label(const Tensor& keras_tensor) const;

  std::vector<Tensor> inputs_;
  std::vector<std::string> keys_;
  InputForm input_form_ = InputForm::one;
  Tensor output_;
  std::string error_prefix_;
  std::vector<Step> steps_;
};

}  // namespace kestrel
