#include "framework/optimizers/optimizer.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/merge_call.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/optimizers/serialization.h"

namespace kestrel::optimizers {
namespace {

std::string slot_prefix(const std::string& variable_name) {
  std::string out = variable_name;
  for (char& c : out) {
    if (c == '/') c = '_';
  }
  return out;
}

void check_positive(const char* what, const std::optional<double>& value, const std::string& optimizer) {
  if (value && !(*value >= 0.0 && std::isfinite(*value))) {
    throw ValueError("optimizer '" + optimizer + "': " + what + " must be a finite number >= 0, got " +
                     std::to_string(*value));
  }
}

}  // namespace

Optimizer::Optimizer(std::string default_name, CommonOptions options)
    : name_(options.name.empty() ? std::move(default_name) : options.name), options_(std::move(options)) {
  check_positive("weight_decay", options_.weight_decay, name_);
  check_positive("clipnorm", options_.clipnorm, name_);
  check_positive("clipvalue", options_.clipvalue, name_);
  check_positive("global_clipnorm", options_.global_clipnorm, name_);
  if (options_.clipnorm && options_.global_clipnorm) {
    throw ValueError("optimizer '" + name_ + "': set clipnorm or global_clipnorm, not both (as in Keras)");
  }
  if (options_.gradient_accumulation_steps && *options_.gradient_accumulation_steps < 1) {
    throw ValueError("optimizer '" + name_ + "': gradient_accumulation_steps must be an integer >= 1 (the calls " +
                     "whose gradients one update averages), got " +
                     std::to_string(*options_.gradient_accumulation_steps));
  }
  iterations_ = Variable(name_ + "/iteration", Tensor::scalar(0, DType::int64), /*trainable=*/false);
  if (!options_.learning_rate.is_schedule()) {
    double lr = options_.learning_rate.at(0);
    if (!(lr >= 0.0 && std::isfinite(lr))) {
      throw ValueError("optimizer '" + name_ + "': learning_rate must be a finite number >= 0, got " +
                       std::to_string(lr));
    }
    learning_rate_ = Variable(name_ + "/learning_rate", Tensor::scalar(lr), /*trainable=*/false);
  }
}

std::int64_t Optimizer::iterations() const {
  return static_cast<std::int64_t>(iterations_.value().item()) / gradient_accumulation_steps();
}

double Optimizer::learning_rate() const {
  if (learning_rate_.defined()) return learning_rate_.value().item();
  return options_.learning_rate.at(iterations());
}

const Tensor& Optimizer::applied_steps() {
  return per_step("applied_steps", [&] {
    const int k = gradient_accumulation_steps();
    return k == 1 ? iterations_.value() : ops::divide(iterations_.value(), Tensor::scalar(k, DType::int64));
  });
}

void Optimizer::set_learning_rate(double value) {
  if (!learning_rate_.defined()) {
    throw ValueError("optimizer '" + name_ + "' follows a learning-rate schedule (" +
                     options_.learning_rate.schedule()->name() + "); its rate cannot be set");
  }
  learning_rate_.assign(Tensor::scalar(value));
}

nlohmann::json Optimizer::get_config() const {
  auto or_null = [](const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); };
  const LearningRate& lr = options_.learning_rate;
  // Keras refuses gradient_accumulation_steps=1 ("must be >= 2"): one step per call is its None.
  const int accumulation = gradient_accumulation_steps();
  return {{"name", name_},
          {"learning_rate", lr.is_schedule() ? schedules::serialize(*lr.schedule()) : nlohmann::json(learning_rate())},
          {"weight_decay", or_null(options_.weight_decay)},
          {"clipnorm", or_null(options_.clipnorm)},
          {"global_clipnorm", or_null(options_.global_clipnorm)},
          {"clipvalue", or_null(options_.clipvalue)},
          {"use_ema", false},
          {"ema_momentum", 0.99},
          {"ema_overwrite_frequency", nullptr},
          {"loss_scale_factor", nullptr},
          {"gradient_accumulation_steps", accumulation > 1 ? nlohmann::json(accumulation) : nlohmann::json(nullptr)}};
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out{iterations_};
  if (learning_rate_.defined()) out.push_back(learning_rate_);
  out.insert(out.end(), slots_.begin(), slots_.end());
  return out;
}

void Optimizer::build(const std::vector<Variable>& variables) {
  if (built_) return;
  for (std::size_t i = 0; i < variables.size(); ++i) index_of_[variables[i].id()] = i;
  // Keras creates the accumulators before the subclass's slots; the checkpoint layout follows.
  if (gradient_accumulation_steps() > 1) {
    for (const Variable& v : variables) accumulators_.push_back(add_slot(v, "gradient_accumulator"));
  }
  build_slots(variables);
  built_ = true;
}

Variable Optimizer::add_slot(const Variable& reference, const std::string& slot_name) {
  Variable slot(name_ + "/" + slot_prefix(reference.name()) + "_" + slot_name,
                Tensor::zeros(reference.shape(), reference.dtype()), /*trainable=*/false);
  slots_.push_back(slot);
  return slot;
}

const ElementwiseProgram& Optimizer::program(std::string_view name, const std::function<ElementwiseProgram()>& make) {
  auto found = programs_.find(name);
  if (found == programs_.end()) found = programs_.emplace(std::string(name), make()).first;
  return found->second;
}

const Tensor& Optimizer::per_step(std::string_view name, const std::function<Tensor()>& make) {
  auto found = per_step_.find(name);
  if (found == per_step_.end()) found = per_step_.emplace(std::string(name), make()).first;
  return found->second;
}

std::vector<Tensor> Optimizer::clip(const std::vector<Tensor>& gradients) const {
  std::vector<Tensor> out = gradients;
  // An undefined gradient (nothing reached that variable) stays undefined and out of the norms.
  if (options_.clipvalue) {
    for (Tensor& g : out) {
      if (!g.defined()) continue;
      g = ops::minimum(ops::maximum(g, ops::scalar_like(g, -*options_.clipvalue)),
                       ops::scalar_like(g, *options_.clipvalue));
    }
  }
  // Scale by clip / max(norm, clip): a no-op below the threshold, written without a branch on data.
  auto scale_for = [](const Tensor& norm, double limit) {
    Tensor clip = ops::scalar_like(norm, limit);
    return ops::divide(clip, ops::maximum(norm, clip));
  };
  if (options_.clipnorm) {
    for (Tensor& g : out) {
      if (g.defined()) g = ops::multiply(g, scale_for(ops::sqrt(ops::sum(ops::square(g))), *options_.clipnorm));
    }
  }
  if (options_.global_clipnorm && !out.empty()) {
    Tensor total = Tensor::scalar(0.0);
    for (const Tensor& g : out) {
      if (g.defined()) total = ops::add(total, ops::cast(ops::sum(ops::square(g)), DType::float32));
    }
    Tensor scale = scale_for(ops::sqrt(total), *options_.global_clipnorm);
    for (Tensor& g : out) {
      if (g.defined()) g = ops::multiply(g, ops::cast(scale, g.dtype()));
    }
  }
  return out;
}

void Optimizer::apply(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  if (gradients.size() != variables.size()) {
    throw ValueError("optimizer '" + name_ + "': " + std::to_string(gradients.size()) + " gradients for " +
                     std::to_string(variables.size()) + " variables; pass one gradient per variable");
  }
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (gradients[i].defined() && gradients[i].shape() != variables[i].shape()) {
      throw ShapeError("optimizer '" + name_ + "': the gradient for '" + variables[i].name() + "' is " +
                       gradients[i].shape().to_string() + " but the variable is " + variables[i].shape().to_string());
    }
  }
  // In a replica of a step that several run side by side, the replicas meet here: their
  // gradients are summed in replica order and the shared variables updated once (TF's merge_call
  // in apply_gradients). Clipping and accumulation therefore see the global batch's gradients.
  distribute::merge_call("optimizer.apply", gradients,
                         [&](const distribute::MergedValues& merged) { apply_once(merged.sum(), variables); });
}

void Optimizer::apply_once(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  autodiff::NoGradScope no_grad;  // updates are not part of any gradient
  build(variables);
  per_step_.clear();
  for (const Variable& v : variables) {
    if (index_of_.find(v.id()) == index_of_.end()) {
      throw ValueError("optimizer '" + name_ + "' was built for other variables; '" + v.name() +
                       "' is new to it (use one optimizer per model)");
    }
  }
  if (gradient_accumulation_steps() > 1) {
    accumulate_and_update(gradients, variables);
  } else {
    update(gradients, variables);
  }
  iterations_.assign(ops::add(iterations_.value(), Tensor::scalar(1, DType::int64)));
}

void Optimizer::update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  const std::vector<Tensor> clipped = clip(gradients);
  // A schedule is evaluated on the counter's tensor, not iterations(): a traced step has no value to read.
  const Tensor lr = learning_rate_.defined() ? learning_rate_.value() : options_.learning_rate.at(applied_steps());
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Variable& v = variables[i];
    if (!clipped[i].defined()) continue;  // no gradient reached this variable
    if (options_.weight_decay && *options_.weight_decay > 0.0) {
      // var - var * (lr * weight_decay), the decay rate computed once per step and dtype.
      const DType dtype = v.dtype();
      const Tensor& decay = per_step(std::string("decay/") + std::string(to_string(dtype)), [&] {
        return ops::multiply(ops::cast(lr, dtype), Tensor::scalar(*options_.weight_decay, dtype));
      });
      const ElementwiseProgram& decayed = program("decay", [] {
        ElementwiseBuilder b;
        auto var = b.input(0), rate = b.input(1);
        return b.build(var - var * rate);
      });
      v.assign(ops::fused_elementwise(decayed, {v.value(), decay}));
    }
    update_step(clipped[i], v, index_of_.at(v.id()), lr);
  }
}

void Optimizer::accumulate_and_update(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  const int k = gradient_accumulation_steps();
  // This call is the k-th of its group when the calls so far, this one included, divide by k.
  const Tensor calls = ops::add(iterations_.value(), Tensor::scalar(1, DType::int64));
  const Tensor k_tensor = Tensor::scalar(k, DType::int64);
  const Tensor updates_now = ops::equal(ops::multiply(ops::divide(calls, k_tensor), k_tensor), calls);

  // The group's gradients so far, this call's included, and their mean (undefined where no
  // gradient reached a variable this call: it is left alone, as without accumulation).
  std::vector<Tensor> sums(variables.size()), means(variables.size());
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!gradients[i].defined()) continue;
    const Variable& accumulator = accumulators_[index_of_.at(variables[i].id())];
    sums[i] = ops::add(accumulator.value(), ops::cast(gradients[i], accumulator.dtype()));
    means[i] = ops::divide(sums[i], Tensor::scalar(k, sums[i].dtype()));
  }

  // The update runs on every call, and each value it changed keeps the new value only on the
  // k-th call: the variables, the subclass's slots, and anything else the update assigns.
  std::vector<Variable> updated = variables;
  updated.insert(updated.end(), slots_.begin(), slots_.end());
  std::vector<Tensor> before;
  for (const Variable& v : updated) before.push_back(v.value());
  update(means, variables);
  for (std::size_t i = 0; i < updated.size(); ++i) {
    const Tensor& after = updated[i].value();
    if (!after.is_same(before[i])) updated[i].assign(ops::where(updates_now, after, before[i]));
  }

  // The accumulators start again after an update, and carry the sum otherwise.
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!sums[i].defined()) continue;
    const Variable& accumulator = accumulators_[index_of_.at(variables[i].id())];
    accumulator.assign(ops::where(updates_now, ops::zeros_like(sums[i]), sums[i]));
  }
}

}  // namespace kestrel::optimizers
