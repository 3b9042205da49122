#include "framework/layers/layer.h"

#include <cctype>
#include <map>
#include <mutex>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/autocast_scope.h"

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
      weights_(std::move(other.weights_)),
      trainable_(other.trainable_),
      built_(other.built_),
      last_output_shape_(std::move(other.last_output_shape_)) {
  // Children live on the heap and stay put; only their back pointer must follow the move.
  for (Layer* child : children_) child->parent_ = this;
}

Layer::~Layer() = default;

Tensor Layer::operator()(const Tensor& x, bool training) {
  if (!x.defined()) throw ValueError(error_prefix() + "called on an undefined tensor");
  const CallScope scope(*this);
  const Tensor input = scope.input(x);
  maybe_build(input.shape());
  Tensor y = call(input, training);
  if (y.defined()) record_output_shape(y.shape());
  return y;
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
  return v;
}

void Layer::track_weight(const Variable& variable) {
  if (!variable.defined()) throw ValueError(error_prefix() + "cannot track an undefined variable");
  weights_.push_back(variable);
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

void Layer::adopt(std::unique_ptr<Layer> child) {
  child->parent_ = this;
  child->inherit_dtype_policy(dtype_policy_);
  children_.push_back(child.get());
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
  for (const Variable& v : weights_) v.set_trainable(trainable);
  for (Layer* child : children_) child->set_trainable(trainable);
}

}  // namespace kestrel
