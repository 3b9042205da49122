#include "framework/model/model.h"

#include <iostream>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/jit/trace.h"
#include "framework/model/jit_steps.h"
#include "framework/ops/elementwise.h"
#include "framework/saving/weights_file.h"

namespace kestrel {

Model::Model(std::string name, std::string class_name) : Layer(std::move(class_name), std::move(name)) {}
Model::~Model() = default;

Tensor Model::operator()(const Inputs& inputs, bool training) {
  if (!inputs.defined()) throw ValueError("model '" + this->name() + "' was called on empty inputs");
  jit::LayerScope scope(name(), class_name());
  Tensor y = call(inputs, training);
  mark_built();
  if (y.defined()) record_output_shape(y.shape());
  return y;
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
  optimizer_ = options.optimizer.shared();
  loss_ = options.loss ? options.loss.shared() : nullptr;
  resolve_metrics(options.metrics, options.weighted_metrics);
  loss_tracker_ = std::make_shared<metrics::Mean>(metrics::MeanOptions{.name = "loss"});
  // Programs compiled before hold the old optimizer's and metrics' variables: start afresh.
  jit_ = options.jit_compile ? std::make_unique<detail::JitSteps>(*this) : nullptr;
  compile_options_ = std::move(options);
}

void Model::resolve_metrics(const std::vector<MetricArg>& plain, const std::vector<MetricArg>& weighted) {
  metrics_.clear();
  const std::string loss_name = loss_ ? loss_->name() : "";
  auto resolve = [&](const MetricArg& m) { return m ? m.shared() : metrics::get(m.name(), loss_name).shared(); };
  for (const MetricArg& m : plain) metrics_.push_back(resolve(m));
  weighted_from_ = metrics_.size();
  for (const MetricArg& m : weighted) metrics_.push_back(resolve(m));
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

void Model::save_weights(const std::string& path) const { saving::save_weights(*this, path); }

void Model::load_weights(const std::string& path, LoadWeightsOptions options) {
  saving::load_weights(*this, path, options);
}

}  // namespace kestrel
