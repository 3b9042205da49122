#include "framework/layers/layer.h"

#include <cctype>
#include <map>
#include <mutex>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/serialization.h"

namespace kestrel {
namespace {

struct NameCounters {
  std::mutex mutex;
  std::map<std::string, int> used;  // base name -> how many layers took it
};
NameCounters& name_counters() {
  static NameCounters counters;
  return counters;
}

std::string unique_name(const std::string& base) {
  NameCounters& c = name_counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  int n = c.used[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

}  // namespace

std::string to_snake_case(std::string_view class_name) {
  std::string out;
  for (std::size_t i = 0; i < class_name.size(); ++i) {
    char c = class_name[i];
    bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    // A new word starts at an upper-case letter after a lower-case one, or before a lower-case
    // one inside a run of capitals ("GRUCell" -> "gru_cell"); digits stay attached ("Conv2D").
    if (upper && i > 0) {
      char prev = class_name[i - 1];
      bool prev_lower = std::islower(static_cast<unsigned char>(prev)) != 0;
      bool next_lower = i + 1 < class_name.size() && std::islower(static_cast<unsigned char>(class_name[i + 1])) != 0;
      bool prev_upper = std::isupper(static_cast<unsigned char>(prev)) != 0;
      if (prev_lower || (prev_upper && next_lower)) out += '_';
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

void clear_session() {
  NameCounters& c = name_counters();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.used.clear();
}

Layer::Layer(std::string class_name, std::string name, std::optional<DTypePolicy> dtype)
    : class_name_(std::move(class_name)),
      name_(name.empty() ? unique_name(to_snake_case(class_name_)) : std::move(name)),
      dtype_policy_(dtype.value_or(mixed_precision::global_policy())),
      dtype_policy_given_(dtype.has_value()) {}

Layer::Layer(Layer&& other) noexcept
    : class_name_(std::move(other.class_name_)),
      name_(std::move(other.name_)),
      parent_(other.parent_),
      dtype_policy_(std::move(other.dtype_policy_)),
      dtype_policy_given_(other.dtype_policy_given_),
      owned_(std::move(other.owned_)),
      children_(std::move(other.children_)),
      child_attributes_(std::move(other.child_attributes_)),
      weights_(std::move(other.weights_)),
      weights_trainable_(std::move(other.weights_trainable_)),
      trainable_(other.trainable_),
      built_(other.built_),
      build_input_shapes_(std::move(other.build_input_shapes_)),
      built_for_list_(other.built_for_list_),
      last_output_shape_(std::move(other.last_output_shape_)) {
  // Children live on the heap and stay put; only their back pointer must follow the move.
  for (Layer* child : children_) child->parent_ = this;
}

Layer::~Layer() = default;

Tensor Layer::operator()(const Tensor& x, bool training) & {
  if (!x.defined()) throw ValueError(error_prefix() + "called on an undefined tensor");
  if (functional::is_keras_tensor(x)) return functional::record_call(*this, nullptr, {x});
  const CallScope scope(*this);
  const Tensor input = scope.input(x);
  maybe_build(input.shape());
  Tensor y = call(input, training);
  if (y.defined()) record_output_shape(y.shape());
  return y;
}

Tensor Layer::operator()(const Tensor& x, bool training) && {
  if (x.defined() && functional::is_keras_tensor(x)) {
    std::shared_ptr<Layer> kept = move_to_heap(std::move(*this));
    return functional::record_call(*kept, kept, {x});
  }
  return (*this)(x, training);
}

Tensor Layer::operator()(const std::vector<Tensor>& xs, bool training) & {
  if (xs.empty()) throw ValueError(error_prefix() + "called on an empty list of tensors");
  for (const Tensor& x : xs) {
    if (!x.defined()) throw ValueError(error_prefix() + "called on a list holding an undefined tensor");
  }
  if (functional::is_keras_tensor(xs.front())) return functional::record_call(*this, nullptr, xs, {.list = true});
  const CallScope scope(*this);
  std::vector<Tensor> inputs;
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) {
    inputs.push_back(scope.input(x));
    shapes.push_back(inputs.back().shape());
  }
  maybe_build(shapes);
  Tensor y = call_list(inputs, training);
  if (y.defined()) record_output_shape(y.shape());
  return y;
}

Tensor Layer::operator()(const std::vector<Tensor>& xs, bool training) && {
  if (!xs.empty() && xs.front().defined() && functional::is_keras_tensor(xs.front())) {
    std::shared_ptr<Layer> kept = move_to_heap(std::move(*this));
    return functional::record_call(*kept, kept, xs, {.list = true});
  }
  return (*this)(xs, training);
}

Tensor Layer::call_list(const std::vector<Tensor>& xs, bool training) {
  throw ValueError(error_prefix() + "takes one tensor, not a list of " + std::to_string(xs.size()) +
                   "; call it on each tensor, or merge them first (layers::Concatenate, layers::Add)");
}

Tensor Layer::call_recorded(const functional::RecordedCall& call) {
  if (!call.keywords.empty()) {
    const std::string first =
        call.keywords.tensors.empty() ? call.keywords.flags.front().first : call.keywords.tensors.front();
    throw ValueError(error_prefix() + "takes no keyword arguments, and the call passes '" + first + "'");
  }
  if (call.list) return (*this)(call.positional);
  if (call.positional.size() != 1 || !call.input_keys.empty()) {
    throw ValueError(error_prefix() + "takes one tensor or a list of them, and the call passes " +
                     std::to_string(call.positional.size()) + " arguments");
  }
  return (*this)(call.positional.front());
}

void Layer::record_output_shape(const Shape& shape) {
  if (distribute::records_shared_state()) last_output_shape_ = shape;
}

Tensor Layer::call(const Tensor& x, bool training) {
  throw ValueError("layer '" + name_ + "' (" + class_name_ +
                   ") does not take a single tensor; call it with its own arguments");
}

void Layer::maybe_build(const Shape& input_shape) {
  if (built_) return;
  build(input_shape);
  built_ = true;
  build_input_shapes_ = {input_shape};
}

void Layer::maybe_build(const std::vector<Shape>& input_shapes) {
  if (built_) return;
  build_list(input_shapes);
  built_ = true;
  build_input_shapes_ = input_shapes;
  built_for_list_ = true;
}

nlohmann::json Layer::get_config() const {
  return {{"name", name_}, {"trainable", trainable_}, {"dtype", serialization::to_config(dtype_policy_)}};
}

std::string Layer::path() const {
  // A model is not part of its weights' names, as in Keras; a standalone layer is.
  if (parent_ == nullptr) return is_model() ? "" : name_;
  std::string above = parent_->path();
  return above.empty() ? name_ : above + "/" + name_;
}

Variable Layer::add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                           WeightOptions options) {
  std::string prefix = path();
  std::string full = (prefix.empty() ? name_ : prefix) + "/" + name;  // a model's own weights keep its name
  const DType dtype = options.dtype.value_or(variable_dtype());
  Tensor initial = initializer(shape, dtype, random::next_global_key());
  if (initial.shape() != shape || initial.dtype() != dtype) {
    throw ShapeError("initializer '" + initializer.name() + "' for weight '" + full + "' made " +
                     initial.spec().to_string() + ", expected " + TensorSpec{shape, dtype}.to_string());
  }
  Variable v(std::move(full), initial, options.trainable && trainable_, options.autocast);
  weights_.push_back(v);
  weights_trainable_.push_back(options.trainable);
  return v;
}

void Layer::track_weight(const Variable& variable) {
  if (!variable.defined()) throw ValueError(error_prefix() + "cannot track an undefined variable");
  weights_.push_back(variable);
  weights_trainable_.push_back(variable.trainable());
}

void Layer::replace_weight(const Variable& weight, const Variable& replacement) {
  for (Variable& slot : weights_) {
    if (slot.is_same(weight)) {
      slot = replacement;
      return;
    }
  }
  throw ValueError(error_prefix() + "replace_weight: '" + weight.name() + "' is not one of this layer's weights");
}

void Layer::add_child(Layer& child, std::string attribute) {
  if (!attribute.empty()) {
    if (attribute == "layers" || attribute == "vars") {
      throw ValueError(error_prefix() + "cannot hold layer '" + child.name() + "' under the attribute '" + attribute +
                       "': weights files use that group name; choose another attribute");
    }
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (child_attributes_[i] == attribute) {
        throw ValueError(error_prefix() + "cannot hold layer '" + child.name() + "' under the attribute '" + attribute +
                         "': layer '" + children_[i]->name() + "' already holds it; choose another");
      }
    }
  }
  children_.push_back(&child);
  child_attributes_.push_back(std::move(attribute));
}

void Layer::track_layer(Layer& child, std::string attribute) {
  add_child(child, std::move(attribute));
  if (child.parent_ == nullptr) child.parent_ = this;
}

void Layer::adopt(std::unique_ptr<Layer> child, std::string attribute) {
  add_child(*child, std::move(attribute));
  child->parent_ = this;
  child->inherit_dtype_policy(dtype_policy_);
  owned_.push_back(std::move(child));
}

void Layer::inherit_dtype_policy(const DTypePolicy& policy) {
  // A built layer's weights already exist in its own variable dtype: it keeps its policy.
  if (dtype_policy_given_ || built_) return;
  dtype_policy_ = policy;
  for (Layer* child : children_) child->inherit_dtype_policy(policy);
}

void Layer::collect(std::vector<Variable>& out, bool trainable_part) const {
  for (const Variable& v : weights_) {
    if (v.trainable() == trainable_part) out.push_back(v);
  }
  for (const Layer* child : children_) child->collect(out, trainable_part);
}

// A variable shared by two layers (tied weights) is listed once, where it first appears.
std::vector<Variable> Layer::trainable_weights() const {
  std::vector<Variable> all;
  collect(all, true);
  return unique_variables(all);
}

std::vector<Variable> Layer::non_trainable_weights() const {
  std::vector<Variable> all;
  collect(all, false);
  return unique_variables(all);
}

std::vector<Variable> Layer::weights() const {
  std::vector<Variable> all = trainable_weights();
  for (const Variable& v : non_trainable_weights()) all.push_back(v);
  return unique_variables(all);
}

std::vector<Variable> Layer::own_weights() const {
  std::vector<Variable> out;
  for (bool trainable_part : {true, false}) {
    for (const Variable& v : weights_) {
      if (v.trainable() == trainable_part) out.push_back(v);
    }
  }
  return out;
}

std::int64_t Layer::count_params() const {
  std::int64_t n = 0;
  for (const Variable& v : weights()) n += v.shape().numel();
  return n;
}

void Layer::set_trainable(bool trainable) {
  trainable_ = trainable;
  // Unfreezing gives back trainability only to the weights made trainable (not, say, batch
  // normalization's moving statistics).
  for (std::size_t i = 0; i < weights_.size(); ++i) weights_[i].set_trainable(trainable && weights_trainable_[i]);
  for (Layer* child : children_) child->set_trainable(trainable);
}

}  // namespace kestrel
