#include "framework/saving/keras2_format.h"

#include <algorithm>
#include <map>
#include <set>

#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/optimizers/optimizer.h"
#include "framework/saving/weights_stored_once.h"

namespace kestrel::saving::keras2 {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// Keras names a weight in files by its variable name plus the TensorFlow output index.
std::string file_weight_name(const Variable& v) { return v.name() + ":0"; }

void write_weights(const h5::Group& group, const std::vector<Variable>& weights) {
  std::vector<std::string> names;
  for (const Variable& v : weights) names.push_back(file_weight_name(v));
  write_string_list(group, "weight_names", names);
  for (std::size_t i = 0; i < weights.size(); ++i) group.write_dataset(names[i], weights[i].value());
}

/// The group holding layer_names: the root, or /model_weights in a full-model file.
h5::Group weights_root(const h5::Group& root) {
  if (root.has_attribute("layer_names") || root.has_attribute("layer_names0")) return root.open_group(".");
  if (root.exists("model_weights")) return root.open_group("model_weights");
  throw IOError(in_quotes(root.file_name()) +
                ": not a Keras 2 weights file (no root attribute layer_names); Keras 3 files are named "
                "*.weights.h5");
}

struct FileLayer {
  std::string name;
  std::vector<std::string> weight_names;
};

/// The file's layers that hold weights, in layer_names order (Keras skips the others).
std::vector<FileLayer> file_layers_with_weights(const h5::Group& src) {
  std::vector<FileLayer> out;
  for (const std::string& name : read_string_list(src, "layer_names")) {
    if (!src.exists(name)) {
      throw IOError(in_quotes(src.file_name()) + ": layer_names lists '" + name + "' but the file has no group for it");
    }
    std::vector<std::string> weight_names = read_string_list(src.open_group(name), "weight_names");
    if (!weight_names.empty()) out.push_back({name, std::move(weight_names)});
  }
  return out;
}

/// What each of the model's layers holds in a file: its weights, less those tied to an earlier
/// layer's (stored there, once).
std::map<const Layer*, std::vector<Variable>> stored_weights(const Model& model) {
  WeightsStoredOnce stored;
  std::map<const Layer*, std::vector<Variable>> out;
  for (const Layer* layer : model.layers()) out[layer] = stored.first_time(layer->weights());
  return out;
}

/// Reads a layer's values; on a shape mismatch throws, or (skip) warns and leaves that weight out.
void read_layer_values(const h5::Group& src, const FileLayer& file_layer, const Layer& layer,
                       const std::vector<Variable>& weights, bool skip, Values& out) {
  const h5::Group group = src.open_group(file_layer.name);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const h5::Dataset dataset = group.open_dataset(file_layer.weight_names[i]);
    const Shape stored = dataset.shape();
    if (stored != weights[i].shape()) {
      std::string message = in_quotes(src.file_name()) + ": layer '" + layer.name() + "' weight '" + weights[i].name() +
                            "' is " + weights[i].shape().to_string() + " in the model but " + stored.to_string() +
                            " in the file (" + dataset.path() + ")";
      if (!skip) throw ShapeError(message);
      logging::get("kestrel.saving")->warn("skipping a mismatched weight: {}", message);
      continue;
    }
    out.push_back(read_value(dataset, weights[i]));
  }
}

std::vector<std::string> names_of(const std::vector<Variable>& weights) {
  std::vector<std::string> names;
  for (const Variable& v : weights) names.push_back(v.name());
  return names;
}

Values read_by_order(const h5::Group& src, const Model& model) {
  const std::vector<FileLayer> file_layers = file_layers_with_weights(src);
  const std::map<const Layer*, std::vector<Variable>> stored = stored_weights(model);
  std::vector<const Layer*> layers;
  for (const Layer* layer : model.layers()) {
    if (!stored.at(layer).empty()) layers.push_back(layer);
  }
  if (file_layers.size() != layers.size()) {
    std::vector<std::string> in_file;
    std::vector<std::string> in_model;
    for (const FileLayer& f : file_layers) in_file.push_back(f.name);
    for (const Layer* layer : layers) in_model.push_back(layer->name());
    throw ValueError(in_quotes(src.file_name()) + ": the file has " + std::to_string(file_layers.size()) +
                     " layers with weights (" + joined(in_file) + "), model '" + model.name() + "' has " +
                     std::to_string(layers.size()) + " (" + joined(in_model) +
                     "); layers are matched in order, or by name with {.by_name = true}");
  }
  Values out;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const std::vector<Variable>& weights = stored.at(layers[k]);
    if (file_layers[k].weight_names.size() != weights.size()) {
      throw ValueError(in_quotes(src.file_name()) + ": layer '" + layers[k]->name() + "' (matched in order with '" +
                       file_layers[k].name + "' in the file) has " + std::to_string(weights.size()) + " weights (" +
                       joined(names_of(weights)) + "), the file has " +
                       std::to_string(file_layers[k].weight_names.size()) + " (" + joined(file_layers[k].weight_names) +
                       ")");
    }
    read_layer_values(src, file_layers[k], *layers[k], weights, /*skip=*/false, out);
  }
  return out;
}

Values read_by_name(const h5::Group& src, const Model& model, bool skip_mismatch) {
  std::map<std::string, std::vector<const Layer*>> by_name;
  for (const Layer* layer : model.layers()) by_name[layer->name()].push_back(layer);
  const std::map<const Layer*, std::vector<Variable>> stored = stored_weights(model);
  Values out;
  for (const FileLayer& file_layer : file_layers_with_weights(src)) {
    auto found = by_name.find(file_layer.name);
    if (found == by_name.end()) continue;  // a layer the model does not have: nothing to load
    for (const Layer* layer : found->second) {
      const std::vector<Variable>& weights = stored.at(layer);
      if (file_layer.weight_names.size() != weights.size()) {
        std::string message = in_quotes(src.file_name()) + ": layer '" + layer->name() + "' has " +
                              std::to_string(weights.size()) + " weights (" + joined(names_of(weights)) +
                              "), the file has " + std::to_string(file_layer.weight_names.size()) + " (" +
                              joined(file_layer.weight_names) + ")";
        if (!skip_mismatch) throw ValueError(message);
        logging::get("kestrel.saving")->warn("skipping a mismatched layer: {}", message);
        continue;
      }
      read_layer_values(src, file_layer, *layer, weights, skip_mismatch, out);
    }
  }
  return out;
}

}  // namespace

void write_string_list(const h5::Object& object, const std::string& name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const std::string& v : values) {
    if (v.size() > kAttributeLimit) {
      throw ValueError(in_quotes(object.file_name()) + ": '" + v.substr(0, 64) + "...' (" + std::to_string(v.size()) +
                       " bytes) is longer than an HDF5 attribute can hold (" + std::to_string(kAttributeLimit) +
                       " bytes)");
    }
    width = std::max(width, v.size());
  }
  // NumPy's array_split, as Keras uses: the fewest near-equal chunks that each fit the limit.
  std::size_t chunks = 1;
  while (((values.size() + chunks - 1) / chunks) * width > kAttributeLimit) ++chunks;
  if (chunks == 1) {
    object.write_strings(name, values);
    return;
  }
  const std::size_t base = values.size() / chunks;
  const std::size_t extra = values.size() % chunks;
  std::size_t start = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t count = base + (c < extra ? 1 : 0);
    std::vector<std::string> part(values.begin() + static_cast<std::ptrdiff_t>(start),
                                  values.begin() + static_cast<std::ptrdiff_t>(start + count));
    object.write_strings(name + std::to_string(c), part);
    start += count;
  }
}

std::vector<std::string> read_string_list(const h5::Object& object, const std::string& name) {
  if (object.has_attribute(name)) return object.read_strings(name);
  std::vector<std::string> out;
  for (int chunk = 0; object.has_attribute(name + std::to_string(chunk)); ++chunk) {
    std::vector<std::string> part = object.read_strings(name + std::to_string(chunk));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void save_layers(const h5::Group& root, const Model& model) {
  const std::vector<Variable> own = model.own_weights();
  if (!own.empty()) {
    throw ValueError("model '" + model.name() + "' has weights of its own (" + own.front().name() +
                     "), which the Keras 2 layout cannot hold: save to a \".weights.h5\" file (Keras 3 layout)");
  }
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const Layer* layer : model.layers()) {
    if (!seen.insert(layer->name()).second) {
      throw ValueError("model '" + model.name() + "' has two layers named '" + layer->name() +
                       "'; the Keras 2 layout keys layers by name, so names must be unique");
    }
    names.push_back(layer->name());
  }
  write_string_list(root, "layer_names", names);
  root.write_bytes("backend", "tensorflow");
  root.write_bytes("keras_version", kKerasVersion);

  // Groups are created in name order, as Keras does, so no group name is created before its prefix.
  std::vector<const Layer*> sorted(model.layers().begin(), model.layers().end());
  std::sort(sorted.begin(), sorted.end(), [](const Layer* a, const Layer* b) { return a->name() < b->name(); });
  const std::map<const Layer*, std::vector<Variable>> stored = stored_weights(model);
  for (const Layer* layer : sorted) write_weights(root.create_group(layer->name()), stored.at(layer));
}

void save_optimizer(const h5::Group& group, const optimizers::Optimizer& optimizer) {
  write_weights(group.create_group("optimizer_weights"), optimizer.variables());
}

Values read_layers(const h5::Group& root, const Model& model, const LoadWeightsOptions& options) {
  if (options.skip_mismatch && !options.by_name) {
    throw ValueError(in_quotes(root.file_name()) +
                     ": skip_mismatch needs by_name for Keras 2 files (layers matched in order cannot be skipped)");
  }
  const h5::Group src = weights_root(root);
  return options.by_name ? read_by_name(src, model, options.skip_mismatch) : read_by_order(src, model);
}

std::optional<std::vector<h5::Dataset>> optimizer_state(const h5::Group& root) {
  if (!root.exists("optimizer_weights")) return std::nullopt;
  const h5::Group group = root.open_group("optimizer_weights");
  std::vector<h5::Dataset> out;
  for (const std::string& name : read_string_list(group, "weight_names")) out.push_back(group.open_dataset(name));
  return out;
}

}  // namespace kestrel::saving::keras2
