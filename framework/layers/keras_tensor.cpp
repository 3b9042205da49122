#include "framework/layers/keras_tensor.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/jit/trace.h"
#include "framework/layers/layer.h"

namespace kestrel::functional {

bool is_keras_tensor(const Tensor& tensor) {
  const detail::SymbolicValue* s = tensor.symbolic();
  return s != nullptr && s->keras_history != nullptr;
}

const std::shared_ptr<const Node>& history(const Tensor& keras_tensor) {
  if (!is_keras_tensor(keras_tensor)) {
    throw ValueError(
        "expected a Keras tensor (the output of Input() or of a layer called on one), got " +
        (keras_tensor.defined() ? keras_tensor.spec().to_string() + " holding data" : "an undefined tensor"));
  }
  return keras_tensor.symbolic()->keras_history;
}

Tensor make_keras_tensor(const TensorSpec& spec, std::shared_ptr<const Node> node) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->spec = spec;
  const Layer& layer = *node->layer;
  impl->symbolic = std::make_shared<const detail::SymbolicValue>(detail::SymbolicValue{
      .trace = nullptr,
      .id = -1,
      .origin = "the output of layer '" + layer.name() + "' (" + layer.class_name() + ")",
      .keras_history = std::move(node),
  });
  return Tensor(std::move(impl));
}

Tensor record_call(Layer& layer, std::shared_ptr<Layer> kept, std::vector<Tensor> inputs, RecordOptions options) {
  for (const Tensor& input : inputs) {
    if (!is_keras_tensor(input)) {
      throw ValueError(layer.error_prefix() +
                       "was called on Keras tensors mixed with tensors holding data; a Functional model takes its "
                       "data through its Inputs: make this one an Input() too, or fold the constant into a layer");
    }
  }
  LayerCall call = std::move(options.call);
  if (!call) {
    Layer* target = &layer;
    call = options.list
               ? LayerCall([target](const std::vector<Tensor>& xs, bool training) { return (*target)(xs, training); })
               : LayerCall([target](const std::vector<Tensor>& xs, bool training) {
                   return (*target)(xs.front(), training);
                 });
  }

  // Run the layer on traced stand-ins: it builds from their shapes, and the trace infers the output.
  TensorSpec output;
  {
    jit::Trace trace;
    const jit::TraceScope active(trace);
    std::vector<Tensor> traced;
    traced.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      traced.push_back(trace.input(inputs[i].spec(), "input_" + std::to_string(i)));
    }
    const Tensor y = call(traced, /*training=*/false);
    if (!y.defined())
      throw ValueError(layer.error_prefix() + "returned no tensor, so a Functional model cannot use it");
    output = y.spec();
  }

  auto node = std::make_shared<Node>();
  node->layer = &layer;
  node->kept = std::move(kept);
  node->inputs = std::move(inputs);
  node->input_keys = std::move(options.input_keys);
  node->list = options.list;
  node->keywords = std::move(options.keywords);
  node->call = std::move(call);
  return make_keras_tensor(output, std::move(node));
}

bool use_causal_mask(const Keywords& keywords, const std::string& who) {
  bool causal = false;
  for (const auto& [name, value] : keywords.flags) {
    if (name == "use_causal_mask") {
      causal = value;
    } else if (name != "training" && !(name == "return_attention_scores" && !value)) {
      throw ValueError(who + "takes the flag use_causal_mask by keyword, not '" + name +
                       "' = " + (value ? "true" : "false"));
    }
  }
  return causal;
}

Tensor RecordedCall::keyword(const std::string& name) const {
  for (std::size_t i = 0; i < keywords.tensors.size(); ++i) {
    if (keywords.tensors[i] == name) return keyword_tensors[i];
  }
  return {};
}

bool RecordedCall::flag(const std::string& name, bool fallback) const {
  for (const auto& [key, value] : keywords.flags) {
    if (key == name) return value;
  }
  return fallback;
}

}  // namespace kestrel::functional
