#include "framework/model/functional_graph.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layer.h"
#include "framework/model/keras_shape.h"

namespace kestrel {
namespace {

const layers::InputLayer* as_input_layer(const functional::Node& node) {
  return node.inputs.empty() ? dynamic_cast<const layers::InputLayer*>(node.layer) : nullptr;
}

}  // namespace

FunctionalGraph::FunctionalGraph(std::vector<Tensor> inputs, std::vector<std::string> keys, std::vector<Tensor> outputs,
                                 std::vector<std::string> output_keys, std::string error_prefix)
    : inputs_(std::move(inputs)),
      keys_(std::move(keys)),
      outputs_(std::move(outputs)),
      output_names_(std::move(output_keys)),
      error_prefix_(std::move(error_prefix)) {
  if (inputs_.empty()) throw ValueError(error_prefix_ + "a Functional model needs at least one Input");
  if (!keys_.empty() && keys_.size() != inputs_.size()) {
    throw ValueError(error_prefix_ + "got " + std::to_string(keys_.size()) + " keys for " +
                     std::to_string(inputs_.size()) + " inputs");
  }
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const functional::Node& node = *functional::history(inputs_[i]);
    if (as_input_layer(node) == nullptr) {
      throw ValueError(error_prefix_ + "its inputs must be Input() tensors, but input " + std::to_string(i) + " is " +
                       inputs_[i].symbolic()->origin + "; start the model at an Input()");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (inputs_[j].is_same(inputs_[i])) {
        throw ValueError(error_prefix_ + "input '" + node.layer->name() + "' is listed twice among its inputs");
      }
    }
  }
  input_form_ = !keys_.empty() ? Form::named : inputs_.size() > 1 ? Form::list : Form::one;
  // With several unkeyed inputs, the data is named by the Inputs' own names.
  if (keys_.empty() && inputs_.size() > 1) {
    for (const Tensor& input : inputs_) keys_.push_back(functional::history(input)->layer->name());
  }
  name_outputs();
  std::vector<const void*> visiting;
  for (const Tensor& output : outputs_) add_steps_to(output, visiting);
  for (const Tensor& input : inputs_) {
    const bool is_output =
        std::any_of(outputs_.begin(), outputs_.end(), [&](const Tensor& t) { return t.is_same(input); });
    const bool used = is_output || std::any_of(steps_.begin(), steps_.end(), [&](const Step& s) {
                        return std::any_of(s.node->inputs.begin(), s.node->inputs.end(),
                                           [&](const Tensor& t) { return t.is_same(input); });
                      });
    if (!used) {
      const Layer& layer = *functional::history(input)->layer;
      throw ValueError(error_prefix_ + "input '" + layer.name() + "' (" + layer.class_name() +
                       ") does not reach the outputs; remove it from the inputs, or use it");
    }
  }
}

void FunctionalGraph::name_outputs() {
  if (outputs_.empty()) throw ValueError(error_prefix_ + "a Functional model needs at least one output");
  if (!output_names_.empty() && output_names_.size() != outputs_.size()) {
    throw ValueError(error_prefix_ + "got " + std::to_string(output_names_.size()) + " keys for " +
                     std::to_string(outputs_.size()) + " outputs");
  }
  output_form_ = !output_names_.empty() ? Form::named : outputs_.size() > 1 ? Form::list : Form::one;
  if (output_names_.empty()) {
    for (const Tensor& output : outputs_) {
      if (!functional::is_keras_tensor(output)) {
        throw ValueError(error_prefix_ + "its outputs must be Keras tensors (made by layers called on Input())");
      }
      output_names_.push_back(functional::history(output)->layer->name());
    }
  }
  // Outputs are told apart by name: in the data a model of several outputs trains toward, in its
  // losses and metrics, and in what predict returns.
  for (std::size_t i = 0; i < output_names_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (output_names_[i] == output_names_[j]) {
        throw ValueError(error_prefix_ + "two of its outputs are named '" + output_names_[i] +
                         "' (one layer's output listed twice, or a layer called twice); give each output its "
                         "own layer, or pass the outputs named: Model(inputs, {{\"a\", a}, {\"b\", b}})");
      }
    }
  }
}

void FunctionalGraph::add_steps_to(const Tensor& tensor, std::vector<const void*>& visiting) {
  for (const Tensor& input : inputs_) {
    if (input.is_same(tensor)) return;  // the data comes in here
  }
  for (const Step& step : steps_) {
    if (step.output.is_same(tensor)) return;
  }
  const std::shared_ptr<const functional::Node>& node = functional::history(tensor);
  if (as_input_layer(*node) != nullptr) {
    throw ValueError(error_prefix_ + "its output depends on input '" + node->layer->name() +
                     "', which is not among the model's inputs (the graph is disconnected); add it to the inputs");
  }
  // Keras tensors are immutable records of calls already made, so they cannot form a cycle; the
  // check guards the walk against a record that was altered.
  if (std::find(visiting.begin(), visiting.end(), tensor.id()) != visiting.end()) {
    throw ValueError(error_prefix_ + "layer '" + node->layer->name() + "' (" + node->layer->class_name() +
                     ") reads its own output: the layer graph has a cycle");
  }
  visiting.push_back(tensor.id());
  for (const Tensor& input : node->inputs) add_steps_to(input, visiting);
  visiting.pop_back();
  steps_.push_back({node, tensor});
}

Tensor FunctionalGraph::input_data(const Inputs& data, std::size_t i) const {
  const std::string& name = functional::history(inputs_[i])->layer->name();
  Tensor x;
  if (keys_.empty()) {
    // One input: one tensor, or named data holding the Input's name (as Keras takes a dict).
    x = data.is_named() ? data[name] : data.tensor();
  } else {
    if (!data.is_named()) {
      throw ValueError(error_prefix_ + "takes " + std::to_string(inputs_.size()) +
                       " named inputs, got one tensor; pass Inputs{{\"" + keys_.front() + "\", ...}, ...}");
    }
    x = data[keys_[i]];
  }
  const Shape& expected = inputs_[i].shape();
  bool fits = x.shape().rank() == expected.rank();
  for (int d = 1; fits && d < expected.rank(); ++d) fits = x.shape()[d] == expected[d];
  if (!fits) {
    throw ShapeError(error_prefix_ + "input '" + name + "' expects shape " + keras_batch_shape(expected) + ", got " +
                     x.shape().to_string() + " (the batch dim first)");
  }
  return x;
}

Outputs FunctionalGraph::run(const Inputs& data, bool training) const {
  std::unordered_map<const void*, Tensor> values;
  for (std::size_t i = 0; i < inputs_.size(); ++i) values[inputs_[i].id()] = input_data(data, i);
  std::vector<Tensor> args;
  for (const Step& step : steps_) {
    args.clear();
    for (const Tensor& input : step.node->inputs) args.push_back(values.at(input.id()));
    values[step.output.id()] = step.node->call(args, training);
  }
  if (output_form_ == Form::one) return Outputs(values.at(outputs_.front().id()));
  std::map<std::string, Tensor> named;
  for (std::size_t i = 0; i < outputs_.size(); ++i) named.emplace(output_names_[i], values.at(outputs_[i].id()));
  return Outputs(std::move(named));
}

std::vector<Layer*> FunctionalGraph::layers() const {
  std::vector<Layer*> out;
  auto add = [&](Layer* layer) {
    if (std::find(out.begin(), out.end(), layer) == out.end()) out.push_back(layer);
  };
  for (const Tensor& input : inputs_) add(functional::history(input)->layer);
  for (const Step& step : steps_) add(step.node->layer);
  return out;
}

int FunctionalGraph::node_index(const Tensor& keras_tensor) const {
  const functional::Node* node = functional::history(keras_tensor).get();
  int index = 0;
  for (const Step& step : steps_) {
    if (step.node.get() == node) break;
    if (step.node->layer == node->layer) ++index;
  }
  return index;
}

std::string FunctionalGraph::tensor_label(const Tensor& keras_tensor) const {
  return functional::history(keras_tensor)->layer->name() + "[" + std::to_string(node_index(keras_tensor)) + "][0]";
}

std::vector<std::string> FunctionalGraph::connected_to(const Layer& layer) const {
  std::vector<std::string> out;
  for (const Step& step : steps_) {
    if (step.node->layer != &layer) continue;
    for (const Tensor& input : step.node->inputs) out.push_back(tensor_label(input));
  }
  return out;
}

bool FunctionalGraph::is_chain() const {
  if (inputs_.size() != 1) return false;
  const Tensor* previous = &inputs_.front();
  for (const Step& step : steps_) {
    if (step.node->inputs.size() != 1 || !step.node->inputs.front().is_same(*previous)) return false;
    previous = &step.output;
  }
  return layers().size() == steps_.size() + 1;
}

}  // namespace kestrel
