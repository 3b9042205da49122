#include "framework/optimizers/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/elementwise.h"
#include "framework/optimizers/option_checks.h"

namespace kestrel::optimizers {

nlohmann::json LearningRateSchedule::get_config() const {
  throw ValueError("learning-rate schedule '" + name() +
                   "' has no Keras config: only Kestrel's schedules (ExponentialDecay, PiecewiseConstantDecay, "
                   "CosineDecay) can be saved in a model's compile config");
}

namespace schedules {
namespace {

template <class T>
const T& require(const std::optional<T>& value, const char* schedule, const char* option) {
  if (!value) throw ValueError(std::string(schedule) + ": " + option + " is required");
  return *value;
}

void check(bool ok, const char* schedule, const char* option, const char* rule, double value) {
  if (ok) return;
  std::ostringstream message;
  message << schedule << ": " << option << " must be " << rule << ", got " << value;
  throw ValueError(message.str());
}

// The tensor forms' step: an integer scalar, as int64. Steps count updates, so they are >= 0.
Tensor int64_step(const char* schedule, const Tensor& step) {
  if (!step.defined()) {
    throw ValueError(std::string(schedule) +
                     ": step is an undefined tensor; pass the optimizer's iteration count, "
                     "an int64 scalar (Optimizer::iterations_variable().value())");
  }
  if (!is_integer(step.dtype())) {
    throw TypeError(std::string(schedule) + ": step is " + step.spec().to_string() +
                    "; it must be an integer scalar, the optimizer's iteration count");
  }
  if (step.rank() != 0) {
    throw ShapeError(std::string(schedule) + ": step is " + step.spec().to_string() +
                     "; it must be a scalar (shape []), the optimizer's iteration count");
  }
  return ops::cast(step, DType::int64);
}

Tensor int64_scalar(std::int64_t value) { return Tensor::from_vector<std::int64_t>({value}, Shape{}); }

// sin(v) for v in [0, pi/2], as its Taylor polynomial to v^13 in Horner form: the truncation
// error is below 1e-9, under float32's resolution, and its relative error stays small as v -> 0.
// Kestrel has no sin or cos op, and cosine decay needs only this quarter turn.
Tensor sin_of_quarter_turn(const Tensor& v) {
  const Tensor v_squared = ops::square(v);
  Tensor series = Tensor::scalar(1.0);
  for (int k = 6; k >= 1; --k) series = 1.0 - v_squared * series / static_cast<double>((2 * k) * (2 * k + 1));
  return v * series;
}

using serialization::Config;

// A count of steps from a config: a whole number (Keras takes 1000.0 as 1000, but not 1000.5).
std::int64_t steps_from(const Config& value, const std::string& key, const std::string& what) {
  if (value.is_number_integer() ||
      (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>())) {
    return value.get<std::int64_t>();
  }
  throw ValueError(what + ": '" + key + "' in the config is " + value.dump() + "; it must be a whole number of steps");
}

std::int64_t required_steps(const Config& config, const std::string& key, const std::string& what) {
  return steps_from(serialization::required<Config>(config, key, what), key, what);
}

}  // namespace

ExponentialDecay::ExponentialDecay(ExponentialDecayOptions options) : options_(std::move(options)) {
  constexpr const char* kName = "ExponentialDecay";
  const double initial = require(options_.initial_learning_rate, kName, "initial_learning_rate");
  const std::int64_t steps = require(options_.decay_steps, kName, "decay_steps");
  const double rate = require(options_.decay_rate, kName, "decay_rate");
  check(std::isfinite(initial), kName, "initial_learning_rate", "finite", initial);
  check(steps > 0, kName, "decay_steps", "> 0", static_cast<double>(steps));
  check(rate >= 0.0 && std::isfinite(rate), kName, "decay_rate", "a finite number >= 0", rate);
}

double ExponentialDecay::operator()(std::int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(*options_.decay_steps);
  if (options_.staircase) p = std::floor(p);
  return *options_.initial_learning_rate * std::pow(*options_.decay_rate, p);
}

Tensor ExponentialDecay::operator()(const Tensor& step) const {
  const Tensor s = int64_step("ExponentialDecay", step);
  // Staircase floors step / decay_steps: an exact integer division, as steps are >= 0.
  const Tensor p = options_.staircase ? ops::cast(ops::divide(s, int64_scalar(*options_.decay_steps)), DType::float32)
                                      : ops::cast(s, DType::float32) / static_cast<double>(*options_.decay_steps);
  return *options_.initial_learning_rate * ops::pow(Tensor::scalar(*options_.decay_rate), p);
}

nlohmann::json ExponentialDecay::get_config() const {
  return {{"initial_learning_rate", *options_.initial_learning_rate},
          {"decay_steps", *options_.decay_steps},
          {"decay_rate", *options_.decay_rate},
          {"staircase", options_.staircase},
          {"name", options_.name}};
}

ExponentialDecay ExponentialDecay::from_config(const nlohmann::json& config) {
  using serialization::optional;
  using serialization::required;
  const std::string what = "learning-rate schedule class 'ExponentialDecay'";
  serialization::check_config_keys(config, what,
                                   {"initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name"});
  ExponentialDecayOptions o;
  return ExponentialDecay({.initial_learning_rate = required<double>(config, "initial_learning_rate", what),
                           .decay_steps = required_steps(config, "decay_steps", what),
                           .decay_rate = required<double>(config, "decay_rate", what),
                           .staircase = optional<bool>(config, "staircase", o.staircase, what),
                           .name = optional<std::string>(config, "name", o.name, what)});
}

PiecewiseConstantDecay::PiecewiseConstantDecay(PiecewiseConstantDecayOptions options) : options_(std::move(options)) {
  if (options_.values.size() != options_.boundaries.size() + 1) {
    throw ValueError("PiecewiseConstantDecay: values needs one more entry than boundaries; got " +
                     std::to_string(options_.boundaries.size()) + " boundaries and " +
                     std::to_string(options_.values.size()) + " values");
  }
  for (std::size_t i = 1; i < options_.boundaries.size(); ++i) {
    if (options_.boundaries[i] <= options_.boundaries[i - 1]) {
      throw ValueError("PiecewiseConstantDecay: boundaries must increase strictly; boundary " + std::to_string(i) +
                       " is " + std::to_string(options_.boundaries[i]) + " after " +
                       std::to_string(options_.boundaries[i - 1]));
    }
  }
}

double PiecewiseConstantDecay::operator()(std::int64_t step) const {
  // The first boundary not below step closes the step's interval (intervals are (b[i-1], b[i]]).
  const auto& b = options_.boundaries;
  const auto interval = std::lower_bound(b.begin(), b.end(), step) - b.begin();
  return options_.values[static_cast<std::size_t>(interval)];
}

Tensor PiecewiseConstantDecay::operator()(const Tensor& step) const {
  const Tensor s = int64_step("PiecewiseConstantDecay", step);
  // From the last interval back: each boundary at or above the step claims it for its value.
  const auto& b = options_.boundaries;
  Tensor rate = Tensor::scalar(options_.values.back());
  for (std::size_t i = b.size(); i-- > 0;) {
    rate = ops::where(ops::less_equal(s, int64_scalar(b[i])), Tensor::scalar(options_.values[i]), rate);
  }
  return rate;
}

nlohmann::json PiecewiseConstantDecay::get_config() const {
  return {{"boundaries", options_.boundaries}, {"values", options_.values}, {"name", options_.name}};
}

PiecewiseConstantDecay PiecewiseConstantDecay::from_config(const nlohmann::json& config) {
  using serialization::required;
  const std::string what = "learning-rate schedule class 'PiecewiseConstantDecay'";
  serialization::check_config_keys(config, what, {"boundaries", "values", "name"});
  PiecewiseConstantDecayOptions o;
  const Config boundaries = required<Config>(config, "boundaries", what);
  const Config values = required<Config>(config, "values", what);
  if (!boundaries.is_array() || !values.is_array()) {
    throw ValueError(what + ": 'boundaries' and 'values' must be lists, got " + boundaries.dump() + " and " +
                     values.dump());
  }
  for (const Config& b : boundaries) o.boundaries.push_back(steps_from(b, "boundaries", what));
  for (const Config& v : values) {
    if (!v.is_number()) throw ValueError(what + ": 'values' must hold numbers, got " + values.dump());
    o.values.push_back(v.get<double>());
  }
  o.name = serialization::optional<std::string>(config, "name", o.name, what);
  return PiecewiseConstantDecay(std::move(o));
}

CosineDecay::CosineDecay(CosineDecayOptions options) : options_(std::move(options)) {
  constexpr const char* kName = "CosineDecay";
  const double initial = require(options_.initial_learning_rate, kName, "initial_learning_rate");
  const std::int64_t steps = require(options_.decay_steps, kName, "decay_steps");
  check(std::isfinite(initial), kName, "initial_learning_rate", "finite", initial);
  check(steps > 0, kName, "decay_steps", "> 0", static_cast<double>(steps));
  check(std::isfinite(options_.alpha), kName, "alpha", "finite", options_.alpha);
  check(options_.warmup_steps >= 0, kName, "warmup_steps", ">= 0", static_cast<double>(options_.warmup_steps));
  if (options_.warmup_target) {
    check(std::isfinite(*options_.warmup_target), kName, "warmup_target", "finite", *options_.warmup_target);
  }
}

double CosineDecay::operator()(std::int64_t step) const {
  const double initial = *options_.initial_learning_rate;
  const auto decay_steps = static_cast<double>(*options_.decay_steps);
  auto decay = [&](double s, double from) {
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * s / decay_steps));
    return from * ((1.0 - options_.alpha) * cosine + options_.alpha);
  };
  const auto s = static_cast<double>(step);
  if (!options_.warmup_target) return decay(std::min(s, decay_steps), initial);
  const double target = *options_.warmup_target;
  const auto warmup_steps = static_cast<double>(options_.warmup_steps);
  const double clamped = std::min(s, decay_steps + warmup_steps);
  if (clamped < warmup_steps) return initial + (target - initial) * clamped / warmup_steps;
  return decay(clamped - warmup_steps, target);
}

nlohmann::json CosineDecay::get_config() const {
  return {{"initial_learning_rate", *options_.initial_learning_rate},
          {"decay_steps", *options_.decay_steps},
          {"alpha", options_.alpha},
          {"name", options_.name},
          {"warmup_target", options_.warmup_target ? Config(*options_.warmup_target) : Config(nullptr)},
          {"warmup_steps", options_.warmup_steps}};
}

CosineDecay CosineDecay::from_config(const nlohmann::json& config) {
  using serialization::optional;
  using serialization::required;
  const std::string what = "learning-rate schedule class 'CosineDecay'";
  serialization::check_config_keys(
      config, what, {"initial_learning_rate", "decay_steps", "alpha", "name", "warmup_target", "warmup_steps"});
  CosineDecayOptions o;
  const bool warms_up = config.contains("warmup_target") && !config.at("warmup_target").is_null();
  return CosineDecay({.initial_learning_rate = required<double>(config, "initial_learning_rate", what),
                      .decay_steps = required_steps(config, "decay_steps", what),
                      .alpha = optional<double>(config, "alpha", o.alpha, what),
                      .warmup_target = warms_up ? std::optional<double>(required<double>(config, "warmup_target", what))
                                                : std::nullopt,
                      .warmup_steps = config.contains("warmup_steps") && !config.at("warmup_steps").is_null()
                                          ? required_steps(config, "warmup_steps", what)
                                          : o.warmup_steps,
                      .name = optional<std::string>(config, "name", o.name, what)});
}

Tensor CosineDecay::operator()(const Tensor& step) const {
  const Tensor s = int64_step("CosineDecay", step);
  const double initial = *options_.initial_learning_rate;
  const std::int64_t decay_steps = *options_.decay_steps;
  // decay_step in [0, decay_steps]. 0.5 * (1 + cos(pi * t)) = sin^2(pi / 2 * (1 - t)): the sine
  // of a quarter turn, accurate to float32 at both ends: no cancellation of 1 + cos near t = 1.
  auto decay = [&](const Tensor& decay_step, double from) {
    const Tensor remaining = ops::cast(int64_scalar(decay_steps) - decay_step, DType::float32);
    const Tensor v = remaining * (std::numbers::pi / (2.0 * static_cast<double>(decay_steps)));
    const Tensor cosine = ops::square(sin_of_quarter_turn(v));
    return from * ((1.0 - options_.alpha) * cosine + options_.alpha);
  };
  if (!options_.warmup_target) return decay(ops::minimum(s, int64_scalar(decay_steps)), initial);

  const double target = *options_.warmup_target;
  const std::int64_t warmup_steps = options_.warmup_steps;
  const Tensor clamped = ops::minimum(s, int64_scalar(decay_steps + warmup_steps));
  // Warm-up steps give negative decay steps; where() discards that branch, the clamp keeps it tame.
  const Tensor decayed = decay(ops::maximum(clamped - int64_scalar(warmup_steps), int64_scalar(0)), target);
  if (warmup_steps == 0) return decayed;
  const Tensor warm =
      initial + (target - initial) * ops::cast(clamped, DType::float32) / static_cast<double>(warmup_steps);
  return ops::where(ops::less(clamped, int64_scalar(warmup_steps)), warm, decayed);
}

}  // namespace schedules
}  // namespace kestrel::optimizers
