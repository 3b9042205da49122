#include "framework/model/model.h"

#include <iostream>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/default_distribution.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/model/functional_graph.h"
#include "framework/model/step_functions.h"
#include "framework/ops/elementwise.h"

namespace kestrel {

Model::Model(std::string name, std::string class_name) : Layer(std::move(class_name), std::move(name)) {}

Model::Model(const Inputs& inputs, const Tensor& outputs, std::string name) : Layer("Functional", std::move(name)) {
  std::vector<std::string> keys;
  std::vector<Tensor> tensors;
  if (inputs.is_named()) {
    for (const auto& [key, tensor] : inputs.named()) {
      keys.push_back(key);
      tensors.push_back(tensor);
    }
  } else {
    tensors.push_back(inputs.tensor());
  }
  functional_ = std::make_shared<const FunctionalGraph>(std::move(tensors), std::move(keys), outputs, error_prefix());
  for (Layer* layer : functional_->layers()) track_layer(*layer);
  mark_built();
  tie_weights();
}

Model::Model(const std::vector<Tensor>& inputs, const Tensor& outputs, std::string name)
    : Layer("Functional", std::move(name)) {
  functional_ = std::make_shared<const FunctionalGraph>(inputs, std::vector<std::string>{}, outputs, error_prefix());
  for (Layer* layer : functional_->layers()) track_layer(*layer);
  mark_built();
  tie_weights();
}

Model::~Model() = default;

Tensor Model::call(const Inputs& inputs, bool training) {
  if (functional_ == nullptr) {
    throw ValueError(error_prefix() +
                     "has no forward pass: a subclass of Model overrides call(), and a Functional model is made "
                     "from Keras tensors, Model(inputs, outputs)");
  }
  return functional_->run(inputs, training);
}

namespace {

// The inputs with their floating tensors in the model's compute dtype (ids and masks stay).
Inputs in_compute_dtype(const Inputs& inputs, const CallScope& scope) {
  if (!inputs.is_named()) return Inputs(scope.input(inputs.tensor()));
  std::map<std::string, Tensor> named;
  for (const auto& [key, tensor] : inputs.named()) named.emplace(key, scope.input(tensor));
  return Inputs(std::move(named));
}

// A model called on Keras tensors: the call becomes one of the Functional model being built.
Tensor record_on_keras_tensors(Model& model, const Inputs& inputs) {
  functional::RecordOptions options;
  std::vector<Tensor> tensors;
  if (inputs.is_named()) {
    for (const auto& [key, tensor] : inputs.named()) {
      options.input_keys.push_back(key);
      tensors.push_back(tensor);
    }
  } else {
    tensors.push_back(inputs.tensor());
  }
  options.call = [&model, keys = options.input_keys](const std::vector<Tensor>& xs, bool training) {
    if (keys.empty()) return model(Inputs(xs.front()), training);
    std::map<std::string, Tensor> named;
    for (std::size_t i = 0; i < keys.size(); ++i) named.emplace(keys[i], xs[i]);
    return model(Inputs(std::move(named)), training);
  };
  return functional::record_call(model, nullptr, std::move(tensors), std::move(options));
}

// Functional models among the layer classes, so a config holding one (alone, or as a layer of
// another model) reads back. Its C++ class is Model itself, which cannot be moved: a Functional
// model is kept by the variable that holds it.
const detail::LayerClassRegistrar kFunctionalClass{LayerClass{
    .package = "keras.src.models.functional",
    .class_name = "Functional",
    .type = std::type_index(typeid(Model)),
    .move_to_heap = nullptr,
    .from_config = [](const nlohmann::json& config) -> std::unique_ptr<Layer> { return Model::from_config(config); },
    .builtin = true,
    .registered_name = "Functional"}};

}  // namespace

Tensor Model::operator()(const Inputs& inputs, bool training) {
  if (!inputs.defined()) throw ValueError("model '" + this->name() + "' was called on empty inputs");
  if (const std::vector<Tensor> tensors = inputs.tensors(); functional::is_keras_tensor(tensors.front())) {
    return record_on_keras_tensors(*this, inputs);
  }
  const CallScope scope(*this);
  Tensor y = call(in_compute_dtype(inputs, scope), training);
  // Under mixed_bfloat16 the outputs come back in the variables' float32, so what follows the model
  // (losses, metrics, predict's results) sees float32; a bfloat16 policy keeps them bfloat16.
  if (dtype_policy().is_mixed() && y.defined() && is_floating(y.dtype())) y = ops::cast(y, variable_dtype());
  if (distribute::records_shared_state() && !built()) {  // replicas share the model: replica 0 writes
    if (!inputs.is_named()) set_build_input_shapes({inputs.tensor().shape()});
    mark_built();
    tie_weights();
  }
  if (y.defined()) record_output_shape(y.shape());
  return y;
}

Tensor Model::call_recorded(const functional::RecordedCall& call) {
  if (!call.keywords.empty() || call.list || (call.input_keys.empty() && call.positional.size() != 1)) {
    throw ValueError(error_prefix() + "takes one input or named inputs, and no keyword arguments");
  }
  if (call.input_keys.empty()) return (*this)(Inputs(call.positional.front()));
  std::map<std::string, Tensor> named;
  for (std::size_t i = 0; i < call.positional.size(); ++i) named.emplace(call.input_keys[i], call.positional[i]);
  return (*this)(Inputs(std::move(named)));
}

void Model::build(const Shape& input_shape) {
  if (built()) return;
  autodiff::NoGradScope no_grad;
  (*this)(Inputs(Tensor::zeros(input_shape)), /*training=*/false);
}

void Model::compile(CompileOptions options) {
  if (!options.optimizer) throw ValueError("model '" + name() + "': compile needs an optimizer");
  if (options.steps_per_execution < 1) {
    throw ValueError("model '" + name() + "': steps_per_execution must be >= 1, got " +
                     std::to_string(options.steps_per_execution));
  }
  // The strategy whose scope compile runs in, else the one the model was built under (Keras's
  // model.distribute_strategy): the metrics made here belong to it too.
  const std::vector<Variable> model_weights = weights();
  distribution_ = distribute::current();
  if (distribution_ == nullptr && !model_weights.empty()) distribution_ = distribute::distribution_of(model_weights[0]);
  std::optional<distribute::DistributionScope> scope;
  if (distribution_ != nullptr) scope.emplace(*distribution_);
  optimizer_ = options.optimizer.shared();
  loss_ = options.loss ? options.loss.shared() : nullptr;
  resolve_metrics(options.metrics, options.weighted_metrics);
  loss_tracker_ = std::make_shared<metrics::Mean>(metrics::MeanOptions{.name = "loss"});
  distribute::require_created_in(distribution_, distributed_variables(), "model '" + name() + "'");
  compile_options_ = std::move(options);
  // Programs compiled before hold the old optimizer's and metrics' variables: start afresh (made
  // now, so the step functions know the model's weight ties as compiled).
  steps_.reset();
  steps();
}

detail::StepFunctions& Model::steps() {
  if (!steps_) steps_ = std::make_unique<detail::StepFunctions>(*this, distribution_or_default(), jit_enabled());
  return *steps_;
}

const distribute::Distribution& Model::distribution_or_default() const {
  return distribution_ != nullptr ? *distribution_ : distribute::default_distribution();
}

void Model::resolve_metrics(const std::vector<MetricArg>& plain, const std::vector<MetricArg>& weighted) {
  metrics_.clear();
  const std::string loss_name = loss_ ? loss_->name() : "";
  auto resolve = [&](const MetricArg& m) { return m ? m.shared() : metrics::get(m.name(), loss_name).shared(); };
  for (const MetricArg& m : plain) metrics_.push_back(resolve(m));
  weighted_from_ = metrics_.size();
  for (const MetricArg& m : weighted) metrics_.push_back(resolve(m));
}

std::vector<Variable> Model::distributed_variables() const {
  std::vector<Variable> out = weights();
  for (const std::vector<Variable>& more :
       {optimizer_ ? optimizer_->variables() : std::vector<Variable>{}, metrics_variables()}) {
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::vector<Variable> Model::metrics_variables() const {
  std::vector<Variable> out = loss_tracker_ ? loss_tracker_->variables() : std::vector<Variable>{};
  for (const auto& m : metrics_) {
    std::vector<Variable> state = m->variables();
    out.insert(out.end(), state.begin(), state.end());
  }
  return out;
}

void Model::enter_distribution(std::optional<distribute::DistributionScope>& scope, const char* method) const {
  const distribute::Distribution* current = distribute::current();
  // Inside another strategy's scope the model's variables are foreign to it: Keras's error.
  if (current != nullptr && current != distribution_) {
    distribute::require_created_in(current, distributed_variables(), "model '" + name() + "' (" + method + ")");
  }
  if (distribution_ != nullptr) scope.emplace(*distribution_);
}

void Model::require_compiled(const char* method) const {
  if (!compiled()) {
    throw ValueError("model '" + name() + "': call compile() before " + method +
                     "(), e.g. model.compile({.optimizer = \"adam\", .loss = \"mse\"})");
  }
}

std::vector<Tensor> Model::get_weights() const {
  std::vector<Tensor> out;
  for (const Variable& v : weights()) out.push_back(v.value());
  return out;
}

void Model::set_weights(const std::vector<Tensor>& values) {
  std::vector<Variable> vars = weights();
  if (values.size() != vars.size()) {
    throw ValueError("model '" + name() + "' has " + std::to_string(vars.size()) + " weights; set_weights got " +
                     std::to_string(values.size()) + " values");
  }
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (values[i].shape() != vars[i].shape()) {
      throw ShapeError("set_weights: weight '" + vars[i].name() + "' is " + vars[i].shape().to_string() +
                       ", the value given is " + values[i].shape().to_string());
    }
  }
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign(ops::cast(values[i], vars[i].dtype()));
}

}  // namespace kestrel
