// A Functional model's Keras config, and the model made back from one (Keras's Functional.get_config
// and functional_from_config). Keras 3 writes each layer with the calls that feed it:
//
//   {"name": "functional", "trainable": true,
//    "layers": [{"module": "keras.layers", "class_name": "InputLayer", "config": {...},
//                "registered_name": null, "name": "input_layer", "inbound_nodes": []},
//               {"module": "keras.layers", "class_name": "Dense", "config": {...}, ...,
//                "name": "dense", "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
//                  "config": {"shape": [null, 784], "dtype": "float32",
//                             "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
//    "input_layers": ["input_layer", 0, 0], "output_layers": ["dense", 0, 0]}
//
// Keras 2 configs (inside .h5 model files) list a call's inputs as [[layer, node, tensor, kwargs]],
// and are read too.
#include <deque>
#include <map>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/serialization.h"
#include "framework/model/functional_graph.h"
#include "framework/model/model.h"

namespace kestrel {
namespace {

using serialization::Config;

Config history_of(const FunctionalGraph& graph, const Tensor& keras_tensor) {
  return Config::array({functional::history(keras_tensor)->layer->name(), graph.node_index(keras_tensor), 0});
}

Config keras_tensor_config(const FunctionalGraph& graph, const Tensor& keras_tensor) {
  return {{"class_name", "__keras_tensor__"},
          {"config",
           {{"shape", serialization::batch_shape_to_config(keras_tensor.shape())},
            {"dtype", std::string(to_string(keras_tensor.dtype()))},
            {"keras_history", history_of(graph, keras_tensor)}}}};
}

// {"args": [...], "kwargs": {...}} for one call: its tensor, its list, its named tensors, or its
// several arguments; and what it was passed by keyword.
Config node_config(const FunctionalGraph& graph, const functional::Node& node) {
  const std::size_t positional = node.positional_count();
  Config args = Config::array();
  if (!node.input_keys.empty()) {
    Config named = Config::object();
    for (std::size_t i = 0; i < positional; ++i) named[node.input_keys[i]] = keras_tensor_config(graph, node.inputs[i]);
    args.push_back(std::move(named));
  } else if (node.list) {
    Config list = Config::array();
    for (std::size_t i = 0; i < positional; ++i) list.push_back(keras_tensor_config(graph, node.inputs[i]));
    args.push_back(std::move(list));
  } else {
    for (std::size_t i = 0; i < positional; ++i) args.push_back(keras_tensor_config(graph, node.inputs[i]));
  }
  Config kwargs = Config::object();
  for (std::size_t i = 0; i < node.keywords.tensors.size(); ++i) {
    kwargs[node.keywords.tensors[i]] = keras_tensor_config(graph, node.inputs[positional + i]);
  }
  for (const auto& [name, value] : node.keywords.flags) kwargs[name] = value;
  return {{"args", std::move(args)}, {"kwargs", std::move(kwargs)}};
}

// The tensors a config's call reads, where each comes from: (layer name, node index), the
// positional ones first, then those passed by keyword.
struct CallInputs {
  std::vector<std::pair<std::string, int>> sources;
  std::vector<std::string> keys;  // for a model called on named tensors
  bool list = false;
  functional::Keywords keywords;
};

std::pair<std::string, int> source_of_history(const Config& history, const std::string& what) {
  if (!history.is_array() || history.size() < 2 || !history[0].is_string() || !history[1].is_number_integer()) {
    throw ValueError(what + ": a call's input must name [layer, node index, tensor index], got " + history.dump());
  }
  return {history[0].get<std::string>(), history[1].get<int>()};
}

bool is_keras_tensor_config(const Config& value) {
  return value.is_object() && value.value("class_name", "") == "__keras_tensor__";
}

std::pair<std::string, int> source_of_keras_tensor(const Config& tensor, const std::string& what) {
  if (!is_keras_tensor_config(tensor)) {
    throw ValueError(what + ": a call's argument is not a Keras tensor: " + tensor.dump() +
                     " (Kestrel's Functional models take tensors and lists or dicts of them)");
  }
  return source_of_history(serialization::required<Config>(tensor.at("config"), "keras_history", what), what);
}

void read_keywords(const Config& kwargs, const std::string& what, CallInputs& out) {
  if (!kwargs.is_object()) throw ValueError(what + ": a call's kwargs must be an object, got " + kwargs.dump());
  for (const auto& [name, value] : kwargs.items()) {
    if (is_keras_tensor_config(value)) {
      out.keywords.tensors.push_back(name);
      out.sources.push_back(source_of_keras_tensor(value, what));
    } else if (value.is_boolean()) {
      out.keywords.flags.emplace_back(name, value.get<bool>());
    } else if (!value.is_null()) {
      throw ValueError(what + ": a call's keyword argument '" + name + "' is " + value.dump() +
                       "; Kestrel passes Keras tensors and true/false by keyword");
    }
  }
}

CallInputs call_inputs(const Config& node, const std::string& what) {
  CallInputs out;
  if (node.is_array()) {  // Keras 2: [[layer, node, tensor, kwargs], ...]
    for (const Config& inbound : node) out.sources.push_back(source_of_history(inbound, what));
    out.list = out.sources.size() > 1;
    return out;
  }
  const Config args = serialization::required<Config>(node, "args", what);
  if (!args.is_array() || args.empty()) {
    throw ValueError(what + ": a call must have positional arguments (a tensor, or a list or dict of them), got " +
                     args.dump());
  }
  const Config& argument = args[0];
  if (args.size() > 1) {  // several arguments: MultiHeadAttention's query and value
    for (const Config& t : args) out.sources.push_back(source_of_keras_tensor(t, what));
  } else if (argument.is_array()) {
    out.list = true;
    for (const Config& t : argument) out.sources.push_back(source_of_keras_tensor(t, what));
  } else if (argument.is_object() && !argument.contains("class_name")) {
    for (const auto& [key, t] : argument.items()) {
      out.keys.push_back(key);
      out.sources.push_back(source_of_keras_tensor(t, what));
    }
  } else {
    out.sources.push_back(source_of_keras_tensor(argument, what));
  }
  if (node.contains("kwargs")) read_keywords(node.at("kwargs"), what, out);
  return out;
}

}  // namespace

Config Model::get_config() const {
  if (functional_ == nullptr) return Layer::get_config();
  const FunctionalGraph& graph = *functional_;
  Config layer_configs = Config::array();
  for (const Layer* layer : graph.layers()) {
    Config object = serialization::serialize_layer(*layer);
    object["name"] = layer->name();
    Config inbound = Config::array();
    for (const FunctionalGraph::Step& step : graph.steps()) {
      if (step.node->layer == layer) inbound.push_back(node_config(graph, *step.node));
    }
    object["inbound_nodes"] = std::move(inbound);
    layer_configs.push_back(std::move(object));
  }
  Config inputs;
  switch (graph.input_form()) {
    case FunctionalGraph::InputForm::one: inputs = history_of(graph, graph.inputs().front()); break;
    case FunctionalGraph::InputForm::list:
      inputs = Config::array();
      for (const Tensor& input : graph.inputs()) inputs.push_back(history_of(graph, input));
      break;
    case FunctionalGraph::InputForm::named:
      inputs = Config::object();
      for (std::size_t i = 0; i < graph.inputs().size(); ++i) {
        inputs[graph.keys()[i]] = history_of(graph, graph.inputs()[i]);
      }
      break;
  }
  return {{"name", name()},
          {"trainable", trainable()},
          {"layers", std::move(layer_configs)},
          {"input_layers", std::move(inputs)},
          {"output_layers", history_of(graph, graph.output())}};
}

std::unique_ptr<Model> Model::from_config(const Config& config) {
  const std::string what = "model class 'Functional'";
  const Config& layer_configs = serialization::required<Config>(config, "layers", what);

  // Make every layer, then replay the calls in an order where each call's inputs exist: a layer's
  // calls may read layers listed after it (Keras retries them, as here).
  std::map<std::pair<std::string, int>, Tensor> made;  // (layer name, node index) -> Keras tensor
  std::vector<std::shared_ptr<Layer>> layers;
  struct Pending {
    Layer* layer;
    std::string name;
    std::deque<Config> calls;
    int next_index = 0;
  };
  std::vector<Pending> pending;
  for (const Config& object : layer_configs) {
    const std::string class_name = serialization::required<std::string>(object, "class_name", what);
    const Config& layer_config = serialization::required<Config>(object, "config", what);
    std::string name = object.contains("name") ? object.at("name").get<std::string>()
                                               : serialization::required<std::string>(layer_config, "name", what);
    if (class_name == "InputLayer") {
      made[{name, 0}] = input_from_config(layer_config);
      continue;
    }
    std::shared_ptr<Layer> layer = serialization::deserialize_layer(object);
    Pending p{layer.get(), name, {}, 0};
    for (const Config& call : serialization::required<Config>(object, "inbound_nodes", what)) p.calls.push_back(call);
    pending.push_back(std::move(p));
    layers.push_back(std::move(layer));
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (Pending& p : pending) {
      while (!p.calls.empty()) {
        const std::string where = "layer '" + p.name + "' (" + p.layer->class_name() + ") in " + what;
        const CallInputs call = call_inputs(p.calls.front(), where);
        std::vector<Tensor> args;
        for (const auto& source : call.sources) {
          const auto found = made.find(source);
          if (found == made.end()) break;
          args.push_back(found->second);
        }
        if (args.size() != call.sources.size()) break;  // an input is not made yet
        const std::size_t positional = args.size() - call.keywords.tensors.size();
        functional::RecordedCall recorded{
            .positional = std::vector<Tensor>(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(positional)),
            .list = call.list,
            .input_keys = call.keys,
            .keyword_tensors = std::vector<Tensor>(args.begin() + static_cast<std::ptrdiff_t>(positional), args.end()),
            .keywords = call.keywords};
        Tensor out;
        try {
          out = p.layer->call_recorded(recorded);
        } catch (const ValueError& e) {
          throw ValueError(where + ": " + e.what());
        }
        made[{p.name, p.next_index++}] = out;
        p.calls.pop_front();
        progress = true;
      }
    }
  }
  for (const Pending& p : pending) {
    if (p.calls.empty()) continue;
    const CallInputs call = call_inputs(p.calls.front(), what);
    std::string missing;
    for (const auto& source : call.sources) {
      if (made.find(source) == made.end()) missing = source.first + "[" + std::to_string(source.second) + "][0]";
    }
    throw ValueError(what + ": layer '" + p.name + "' (" + p.layer->class_name() + ") reads " + missing +
                     ", which no call of the config makes: the layer graph has a cycle or names a layer it does "
                     "not hold");
  }

  const auto tensor_at = [&](const Config& history) {
    const auto source = source_of_history(history, what);
    const auto found = made.find(source);
    if (found == made.end()) {
      throw ValueError(what + ": its inputs or outputs name " + history.dump() +
                       ", which no layer of the config makes");
    }
    return found->second;
  };
  const Config& input_layers = serialization::required<Config>(config, "input_layers", what);
  const Config& output_layers = serialization::required<Config>(config, "output_layers", what);
  // One output, possibly wrapped in a list of one as Keras 2 writes it.
  Config output = output_layers;
  if (output_layers.is_array() && !output_layers.empty() && output_layers[0].is_array()) {
    if (output_layers.size() != 1) {
      throw ValueError(what + ": the config names " + std::to_string(output_layers.size()) +
                       " outputs, and Kestrel's models have one; make one model per output");
    }
    output = output_layers[0];
  }
  const std::string name = serialization::optional<std::string>(config, "name", "", what);
  std::unique_ptr<Model> model;
  if (input_layers.is_object()) {
    std::map<std::string, Tensor> named;
    for (const auto& [key, history] : input_layers.items()) named.emplace(key, tensor_at(history));
    model = std::make_unique<Model>(Inputs(std::move(named)), tensor_at(output), name);
  } else if (input_layers.is_array() && !input_layers.empty() && input_layers[0].is_array()) {
    std::vector<Tensor> inputs;
    for (const Config& history : input_layers) inputs.push_back(tensor_at(history));
    model = inputs.size() == 1 ? std::make_unique<Model>(inputs.front(), tensor_at(output), name)
                               : std::make_unique<Model>(inputs, tensor_at(output), name);
  } else {
    model = std::make_unique<Model>(tensor_at(input_layers), tensor_at(output), name);
  }
  model->layers_from_config_ = std::move(layers);
  model->set_trainable(serialization::optional<bool>(config, "trainable", true, what));
  return model;
}

}  // namespace kestrel
