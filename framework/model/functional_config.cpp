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
// Inputs and outputs are written in the form the model was given them: one reference, a list
// ("output_layers": [["digit", 0, 0], ["size", 0, 0]]), or a dict by key ("output_layers":
// {"digit": ["digit_head", 0, 0], "size": ["size_head", 0, 0]}).
//
// Keras 2 configs (inside .h5 model files) list a call's inputs as [[layer, node, tensor, kwargs]]
// and a single output as a list of one, and are read too.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// input_layers or output_layers as Keras's map_structure writes them: one [layer, node, tensor]
// reference, a list of them, or a dict of them by key.
Config references_config(const FunctionalGraph& graph, FunctionalGraph::Form form, const std::vector<Tensor>& tensors,
                         const std::vector<std::string>& keys) {
  switch (form) {
    case FunctionalGraph::Form::one: return history_of(graph, tensors.front());
    case FunctionalGraph::Form::list: {
      Config list = Config::array();
      for (const Tensor& tensor : tensors) list.push_back(history_of(graph, tensor));
      return list;
    }
    case FunctionalGraph::Form::named: break;
  }
  Config named = Config::object();
  for (std::size_t i = 0; i < tensors.size(); ++i) named[keys[i]] = history_of(graph, tensors[i]);
  return named;
}

// A config's input_layers or output_layers, read back: its references, their keys when it is a
// dict, and its form (a list of one is one tensor, as Keras 2 writes a single output).
struct References {
  FunctionalGraph::Form form = FunctionalGraph::Form::one;
  std::vector<Config> references;
  std::vector<std::string> keys;
};

bool is_reference(const Config& value) { return value.is_array() && !value.empty() && value[0].is_string(); }

References references_from_config(const Config& value, const std::string& key, const std::string& what) {
  References out;
  const auto add = [&](const Config& reference) {
    if (!is_reference(reference)) {
      throw ValueError(what + ": its " + key + " hold " + reference.dump() +
                       "; Kestrel reads [layer, node index, tensor index] references, one, in a list or in a dict");
    }
    out.references.push_back(reference);
  };
  if (is_reference(value)) {
    add(value);
  } else if (value.is_object()) {
    out.form = FunctionalGraph::Form::named;
    for (const auto& [name, reference] : value.items()) {
      out.keys.push_back(name);
      add(reference);
    }
  } else if (value.is_array()) {
    for (const Config& reference : value) add(reference);
    out.form = out.references.size() == 1 ? FunctionalGraph::Form::one : FunctionalGraph::Form::list;
  }
  if (out.references.empty()) {
    throw ValueError(what + ": its " + key + " is " + value.dump() +
                     "; Keras writes [layer, node index, tensor index], or a list or dict of them");
  }
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
  return {{"name", name()},
          {"trainable", trainable()},
          {"layers", std::move(layer_configs)},
          {"input_layers", references_config(graph, graph.input_form(), graph.inputs(), graph.keys())},
          {"output_layers", references_config(graph, graph.output_form(), graph.outputs(), graph.output_names())}};
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

  // The Keras tensor a reference names; the error says whether the config lacks the layer or
  // only that call of it.
  const auto tensor_at = [&](const Config& reference, const std::string& key) {
    const auto source = source_of_history(reference, what);
    const auto found = made.find(source);
    if (found != made.end()) return found->second;
    std::string layer_names;
    int calls = 0;
    for (const auto& [made_source, tensor] : made) {
      if (made_source.first == source.first) ++calls;
    }
    for (const Config& object : layer_configs) {
      const std::string layer_name = object.contains("name") ? object.at("name").get<std::string>()
                                                             : object.at("config").value("name", std::string());
      layer_names += (layer_names.empty() ? "'" : ", '") + layer_name + "'";
    }
    if (calls > 0) {
      throw ValueError(what + ": its " + key + " name " + reference.dump() + ", but the calls of layer '" +
                       source.first + "' in the config are nodes 0 to " + std::to_string(calls - 1));
    }
    throw ValueError(what + ": its " + key + " name layer '" + source.first +
                     "', which the config does not hold; its layers are " + layer_names);
  };
  const auto tensors_of = [&](const References& refs, const std::string& key) {
    std::vector<Tensor> tensors;
    for (const Config& reference : refs.references) tensors.push_back(tensor_at(reference, key));
    return tensors;
  };
  // A dict's tensors by key, or the one tensor.
  const auto structure_of = [](const References& refs, const std::vector<Tensor>& tensors) {
    if (refs.form != FunctionalGraph::Form::named) return Inputs(tensors.front());
    std::map<std::string, Tensor> named;
    for (std::size_t i = 0; i < tensors.size(); ++i) named.emplace(refs.keys[i], tensors[i]);
    return Inputs(std::move(named));
  };
  const References inputs =
      references_from_config(serialization::required<Config>(config, "input_layers", what), "input_layers", what);
  const References outputs =
      references_from_config(serialization::required<Config>(config, "output_layers", what), "output_layers", what);
  const std::vector<Tensor> input_tensors = tensors_of(inputs, "input_layers");
  const std::vector<Tensor> output_tensors = tensors_of(outputs, "output_layers");
  const std::string name = serialization::optional<std::string>(config, "name", "", what);
  // The Model constructor for the forms the model was made with: a list, or one tensor or a dict.
  const auto make = [&](const auto& model_inputs) {
    if (outputs.form == FunctionalGraph::Form::list) return std::make_unique<Model>(model_inputs, output_tensors, name);
    return std::make_unique<Model>(model_inputs, structure_of(outputs, output_tensors), name);
  };
  std::unique_ptr<Model> model =
      inputs.form == FunctionalGraph::Form::list ? make(input_tensors) : make(structure_of(inputs, input_tensors));
  model->layers_from_config_ = std::move(layers);
  model->set_trainable(serialization::optional<bool>(config, "trainable", true, what));
  return model;
}

}  // namespace kestrel
