#include "framework/optimizers/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "framework/core/error.h"

namespace kestrel::optimizers::schedules {
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

}  // namespace

ExponentialDecay::ExponentialDecay(ExponentialDecayOptions options) : options_(std::move(options)) {
  const char* kName = "ExponentialDecay";
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

PiecewiseConstantDecay::PiecewiseConstantDecay(PiecewiseConstantDecayOptions options)
    : options_(std::move(options)) {
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

CosineDecay::CosineDecay(CosineDecayOptions options) : options_(std::move(options)) {
  const char* kName = "CosineDecay";
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

}  // namespace kestrel::optimizers::schedules
