// Model::summary: the Keras table of layers, output shapes and parameter counts.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "framework/core/error.h"
#include "framework/model/functional_graph.h"
#include "framework/model/keras_shape.h"
#include "framework/model/model.h"

namespace kestrel {
namespace {

constexpr int kMinNameWidth = 29;
constexpr int kShapeWidth = 26;
constexpr int kParamWidth = 10;
constexpr int kConnectedWidth = 24;

// Keras writes the batch dim as None: (None, 512).
std::string keras_shape(const std::optional<Shape>& shape) { return shape ? keras_batch_shape(*shape) : "?"; }

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string cell(const std::string& text, int width) {
  std::string out = " " + text;
  if (static_cast<int>(out.size()) < width) out.append(static_cast<std::size_t>(width) - out.size(), ' ');
  return out;
}

}  // namespace

void Model::summary(std::ostream& out) const {
  if (!built()) {
    throw ValueError("model '" + name() +
                     "' has not been built yet; call it on a batch of data or build(input_shape) before summary()");
  }
  // The name column grows to fit the longest "name (Class)", so every row stays aligned.
  int name_width = kMinNameWidth;
  for (const Layer* layer : layers()) {
    name_width = std::max(name_width, static_cast<int>(layer->name().size() + layer->class_name().size()) + 5);
  }
  // A Functional model that is not a plain chain also shows which tensors each layer reads.
  const FunctionalGraph* graph = functional_graph();
  const bool connections = graph != nullptr && !graph->is_chain();
  const int connected_width = connections ? kConnectedWidth : 0;
  const auto table_width = static_cast<std::size_t>(name_width + kShapeWidth + kParamWidth + connected_width);
  const std::string rule(table_width, '_');
  const std::string double_rule(table_width, '=');
  out << "Model: \"" << name() << "\"\n" << rule << "\n";
  out << cell("Layer (type)", name_width) << cell("Output Shape", kShapeWidth) << cell("Param #", kParamWidth);
  if (connections) out << cell("Connected to", connected_width);
  out << "\n" << double_rule << "\n";
  for (std::size_t i = 0; i < layers().size(); ++i) {
    const Layer* layer = layers()[i];
    out << cell(layer->name() + " (" + layer->class_name() + ")", name_width)
        << cell(keras_shape(layer->last_output_shape()), kShapeWidth)
        << cell(std::to_string(layer->count_params()), kParamWidth);
    if (connections) {
      // One inbound tensor per line, the first beside the layer, as Keras prints them.
      const std::vector<std::string> inbound = graph->connected_to(*layer);
      out << cell(inbound.empty() ? "" : inbound.front(), connected_width);
      for (std::size_t k = 1; k < inbound.size(); ++k) {
        out << "\n"
            << cell("", name_width) << cell("", kShapeWidth) << cell("", kParamWidth)
            << cell(inbound[k], connected_width);
      }
    }
    out << "\n";
    if (i + 1 < layers().size()) out << "\n";
  }
  std::int64_t trainable = 0, non_trainable = 0;
  for (const Variable& v : trainable_weights()) trainable += v.shape().numel();
  for (const Variable& v : non_trainable_weights()) non_trainable += v.shape().numel();
  out << double_rule << "\n";
  out << "Total params: " << with_commas(trainable + non_trainable) << "\n";
  out << "Trainable params: " << with_commas(trainable) << "\n";
  out << "Non-trainable params: " << with_commas(non_trainable) << "\n";
  out << rule << "\n";
}

void Model::summary() const { summary(std::cout); }

}  // namespace kestrel
