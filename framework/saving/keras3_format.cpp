#include "framework/saving/keras3_format.h"

#include <map>

#include "framework/core/error.h"
#include "framework/logging/logging.h"
#include "framework/optimizers/optimizer.h"
#include "framework/saving/weights_stored_once.h"

namespace kestrel::saving::keras3 {
namespace {

std::string joined_names(const std::vector<Variable>& weights) {
  std::string out;
  for (const Variable& v : weights) out += (out.empty() ? "" : ", ") + v.name();
  return out.empty() ? "none" : out;
}

/// owner/vars with the weights; a layer's carries its name, as Keras's H5IOStore writes it.
void write_vars(const h5::Group& owner, const std::vector<Variable>& weights, const std::string& layer_name = "") {
  const h5::Group vars = owner.create_group("vars");
  if (!layer_name.empty()) vars.write_text("name", layer_name);
  for (std::size_t i = 0; i < weights.size(); ++i) vars.write_dataset(std::to_string(i), weights[i].value());
}

void write_layer(const h5::Group& group, const Layer& layer, WeightsStoredOnce& stored) {
  write_vars(group, stored.first_time(layer.own_weights()), layer.name());
  const std::vector<std::string> names = child_group_names(layer);
  for (std::size_t i = 0; i < names.size(); ++i) {
    // "layers/dense": "layers" is made on the way.
    write_layer(group.create_group(names[i]), *layer.layers()[i], stored);
  }
}

/// Reads a layer's own values; returns false (a warning is logged) when skip_mismatch skipped them.
bool read_own(const h5::Group& group, const Layer& layer, bool skip_mismatch, WeightsStoredOnce& stored_once,
              Values& out) {
  const std::vector<Variable> own = stored_once.first_time(layer.own_weights());
  const bool has_vars = group.exists("vars");
  const std::size_t stored = has_vars ? group.open_group("vars").size() : 0;
  auto mismatch = [&](const std::string& message) {
    if (!skip_mismatch) return false;
    logging::get("kestrel.saving")->warn("skipping a mismatched layer: {}", message);
    return true;
  };
  if (stored != own.size()) {
    std::string message = in_quotes(group.file_name()) + ": layer '" + layer.name() + "' (" + group.path() + ") has " +
                          std::to_string(own.size()) + " weights (" + joined_names(own) + "), the file has " +
                          std::to_string(stored);
    if (mismatch(message)) return false;
    throw ValueError(message);
  }
  if (own.empty()) return true;
  const h5::Group vars = group.open_group("vars");
  Values values;
  for (std::size_t i = 0; i < own.size(); ++i) {
    const h5::Dataset dataset = vars.open_dataset(std::to_string(i));
    const Shape shape = dataset.shape();
    if (shape != own[i].shape()) {
      std::string message = in_quotes(group.file_name()) + ": layer '" + layer.name() + "' weight '" + own[i].name() +
                            "' is " + own[i].shape().to_string() + " in the model but " + shape.to_string() +
                            " in the file (" + dataset.path() + ")";
      if (mismatch(message)) return false;
      throw ShapeError(message);
    }
    values.push_back(read_value(dataset, own[i]));
  }
  out.insert(out.end(), values.begin(), values.end());
  return true;
}

void read_layer(const h5::Group& group, const Layer& layer, bool skip_mismatch, WeightsStoredOnce& stored,
                Values& out) {
  read_own(group, layer, skip_mismatch, stored, out);
  const std::vector<std::string> names = child_group_names(layer);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Layer& child = *layer.layers()[i];
    const std::string& path = names[i];
    if (!group.exists(path)) {
      if (child.weights().empty()) continue;  // nothing to load, as Keras tolerates
      std::string message = in_quotes(group.file_name()) + ": layer '" + child.name() + "' (" + child.class_name() +
                            ", weights " + joined_names(child.weights()) + ") is missing from the file: no group " +
                            (group.path() == "/" ? "/" : group.path() + "/") + path;
      if (!skip_mismatch) throw ValueError(message);
      logging::get("kestrel.saving")->warn("skipping a missing layer: {}", message);
      continue;
    }
    read_layer(group.open_group(path), child, skip_mismatch, stored, out);
  }
}

}  // namespace

std::vector<std::string> child_group_names(const Layer& layer) {
  // Keras 3 numbers repeats of a class within a list: dense, dense_1, dense_2. A child held under
  // an attribute is found by the attribute's name, as Keras walks a layer's attributes.
  std::map<std::string, int> seen;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < layer.layers().size(); ++i) {
    const std::string& attribute = layer.child_attributes()[i];
    if (!attribute.empty()) {
      names.push_back(attribute);
      continue;
    }
    std::string base = to_snake_case(layer.layers()[i]->class_name());
    const int n = seen[base]++;
    names.push_back("layers/" + (n == 0 ? base : base + "_" + std::to_string(n)));
  }
  return names;
}

void save(const h5::Group& root, const Model& model, const optimizers::Optimizer* optimizer) {
  WeightsStoredOnce stored;
  write_layer(root, model, stored);
  if (optimizer != nullptr) write_vars(root.create_group("optimizer"), optimizer->variables());
}

Values read_layers(const h5::Group& root, const Model& model, const LoadWeightsOptions& options) {
  if (options.by_name) {
    throw ValueError(in_quotes(root.file_name()) +
                     ": by_name applies to Keras 2 \".h5\" files; Keras 3 \".weights.h5\" files match layers "
                     "by the model's structure");
  }
  if (!root.exists("vars") && !root.exists("layers") && !root.exists("optimizer")) {
    throw IOError(in_quotes(root.file_name()) +
                  ": not a Keras 3 weights file (no /layers or /vars group); Keras 2 files are named *.h5");
  }
  Values out;
  WeightsStoredOnce stored;
  read_layer(root, model, options.skip_mismatch, stored, out);
  return out;
}

std::optional<std::vector<h5::Dataset>> optimizer_state(const h5::Group& root) {
  if (!root.exists("optimizer/vars")) return std::nullopt;
  const h5::Group vars = root.open_group("optimizer/vars");
  std::vector<h5::Dataset> out;
  for (std::size_t i = 0; i < vars.size(); ++i) out.push_back(vars.open_dataset(std::to_string(i)));
  return out;
}

}  // namespace kestrel::saving::keras3
