#include "framework/model/model.h"

#include <iostream>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/default_distribution.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/model/compiled_loss.h"
#include "framework/model/compiled_metrics.h"
#include "framework/model/functional_graph.h"
#include "framework/model/step_functions.h"
#include "framework/ops/elementwise.h"

namespace kestrel {

Model::Model(std::string name, std::string class_name) : Layer(std::move(class_name), std::move(name)) {}

namespace {

// A structure's tensors and their keys (no keys for one tensor).
std::pair<std::vector<Tensor>, std::vector<std::string>> keyed_tensors(const Inputs& structure) {
  if (!structure.is_named()) return {{structure.tensor()}, {}};
  std::vector<Tensor> tensors;
  std::vector<std::string> keys;
  for (const auto& [key, tensor] : structure.named()) {
    keys.push_back(key);
    tensors.push_back(tensor);
  }
  return {std::move(tensors), std::move(keys)};
}

}  // namespace

Model::Model(const Inputs& inputs, const Outputs& outputs, std::string name) : Layer("Functional", std::move(name)) {
  auto [input_tensors, input_keys] = keyed_tensors(inputs);
  auto [output_tensors, output_keys] = keyed_tensors(outputs);
  make_functional(std::move(input_tensors), std::move(input_keys), std::move(output_tensors), std::move(output_keys));
}

Model::Model(const std::vector<Tensor>& inputs, const Outputs& outputs, std::string name)
    : Layer("Functional", std::move(name)) {
  auto [output_tensors, output_keys] = keyed_tensors(outputs);
  make_functional(inputs, {}, std::move(output_tensors), std::move(output_keys));
}

Model::Model(const Inputs& inputs, const std::vector<Tensor>& outputs, std::string name)
    : Layer("Functional", std::move(name)) {
  auto [input_tensors, input_keys] = keyed_tensors(inputs);
  make_functional(std::move(input_tensors), std::move(input_keys), outputs, {});
}

Model::Model(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, std::string name)
    : Layer("Functional", std::move(name)) {
  make_functional(inputs, {}, outputs, {});
}

void Model::make_functional(std::vector<Tensor> inputs, std::vector<std::string> keys, std::vector<Tensor> outputs,
                            std::vector<std::string> output_keys) {
  functional_ = std::make_shared<const FunctionalGraph>(std::move(inputs), std::move(keys), std::move(outputs),
                                                        std::move(output_keys), error_prefix());
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
  return single_output(functional_->run(inputs, training));
}

Outputs Model::call_outputs(const Inputs& inputs, bool training) {
  if (functional_ != nullptr) return functional_->run(inputs, training);
  return Outputs(call(inputs, training));
}

std::vector<std::string> Model::output_names() const {
  if (functional_ == nullptr || functional_->output_form() == FunctionalGraph::Form::one) return {};
  return functional_->output_names();
}

Tensor Model::single_output(const Outputs& outputs) const {
  if (!outputs.is_named()) return outputs.tensor();
  throw ValueError(error_prefix() + "has several outputs (" + in_quotes(outputs.names()) +
                   "); run it with outputs_of(x), which returns them by name");
}

namespace {

// The inputs with their floating tensors in the model's compute dtype (ids and masks stay).
Inputs in_compute_dtype(const Inputs& inputs, const CallScope& scope) {
  return inputs.map([&](const Tensor& tensor) { return scope.input(tensor); });
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
    if (!output_names().empty()) {
      throw ValueError(error_prefix() +
                       "has several outputs, and only a model of one output is called as a layer "
                       "of another Functional model");
    }
    return record_on_keras_tensors(*this, inputs);
  }
  return single_output(outputs_of(inputs, training));
}

Outputs Model::outputs_of(const Inputs& inputs, bool training) {
  if (!inputs.defined()) throw ValueError("model '" + this->name() + "' was called on empty inputs");
  if (const std::vector<Tensor> tensors = inputs.tensors(); functional::is_keras_tensor(tensors.front())) {
    return Outputs((*this)(inputs, training));
  }
  const CallScope scope(*this);
  // Under mixed_bfloat16 the outputs come back in the variables' float32, so what follows the model
  // (losses, metrics, predict's results) sees float32; a bfloat16 policy keeps them bfloat16.
  const Outputs y = call_outputs(in_compute_dtype(inputs, scope), training).map([this](const Tensor& t) {
    return dtype_policy().is_mixed() && t.defined() && is_floating(t.dtype()) ? ops::cast(t, variable_dtype()) : t;
  });
  if (distribute::records_shared_state() && !built()) {  // replicas share the model: replica 0 writes
    if (!inputs.is_named()) set_build_input_shapes({inputs.tensor().shape()});
    mark_built();
    tie_weights();
  }
  if (!y.is_named() && y.tensor().defined()) record_output_shape(y.tensor().shape());
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
  outputs_of(Inputs(Tensor::zeros(input_shape)), /*training=*/false);
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
  const std::vector<std::string> outputs = output_names();
  compiled_loss_ = std::make_unique<detail::CompiledLoss>(options.loss, options.loss_weights, outputs, error_prefix());
  compiled_metrics_ = std::make_unique<detail::CompiledMetrics>(options.metrics, options.weighted_metrics, outputs,
                                                                *compiled_loss_, error_prefix());
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

losses::Loss* Model::loss() const { return compiled_loss_ ? compiled_loss_->single() : nullptr; }

const std::vector<std::shared_ptr<metrics::Metric>>& Model::metrics() const {
  static const std::vector<std::shared_ptr<metrics::Metric>> no_metrics;
  return compiled_metrics_ ? compiled_metrics_->metrics() : no_metrics;
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
  if (compiled_loss_) {
    const std::vector<Variable> trackers = compiled_loss_->tracker_variables();
    out.insert(out.end(), trackers.begin(), trackers.end());
  }
  for (const auto& m : metrics()) {
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
