// Learning-rate schedules with Keras's formulas (keras.optimizers.schedules).
//
//   using namespace optimizers::schedules;
//   optimizers::SGD sgd({.learning_rate = ExponentialDecay({.initial_learning_rate = 0.1,
//                                                          .decay_steps = 1000, .decay_rate = 0.96})});
//   optimizers::AdamW adamw({.learning_rate = CosineDecay({.initial_learning_rate = 0.0,
//                                                          .decay_steps = 9000, .warmup_target = 1e-3,
//                                                          .warmup_steps = 1000})});
//   PiecewiseConstantDecay({.boundaries = {100, 200}, .values = {1.0, 0.5, 0.1}})(150);   // 0.5
//
// A schedule maps the optimizer's step count (0 for the first update) to a rate. The optimizer
// asks for it at every step, so set_learning_rate() on an optimizer that follows a schedule throws.
// Each schedule also takes the step as an int64 scalar tensor and returns a float32 scalar tensor,
// computed in float32 as Keras does: the form a traced train step uses.
//
//   Tensor lr = schedule(optimizer.iterations_variable().value());   // float32[], traceable
//
// Each schedule's config holds its options under Keras's keys (get_config), and its static
// from_config reads one back; schedules::serialize wraps it as the Keras object an optimizer's
// config holds for its learning_rate (framework/optimizers/serialization.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/optimizers/learning_rate.h"

namespace kestrel::optimizers::schedules {

/// ExponentialDecay's options; the first three are required.
struct ExponentialDecayOptions {
  std::optional<double> initial_learning_rate = std::nullopt;
  std::optional<std::int64_t> decay_steps = std::nullopt;  ///< > 0
  std::optional<double> decay_rate = std::nullopt;         ///< >= 0
  bool staircase = false;                                  ///< decay at whole multiples of decay_steps only
  std::string name = "ExponentialDecay";                   ///< Keras's name scope; kept for the config
};

/// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  /// Throws ValueError naming the option when one is missing or out of range.
  explicit ExponentialDecay(ExponentialDecayOptions options);
  double operator()(std::int64_t step) const override;
  Tensor operator()(const Tensor& step) const override;
  std::string name() const override { return "ExponentialDecay"; }
  const ExponentialDecayOptions& options() const { return options_; }
  /// Keras's keys: the options above, by their names.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; a key Kestrel does not know is a ValueError.
  static ExponentialDecay from_config(const nlohmann::json& config);

 private:
  ExponentialDecayOptions options_;
};

/// PiecewiseConstantDecay's options: values has one more entry than boundaries.
struct PiecewiseConstantDecayOptions {
  std::vector<std::int64_t> boundaries = {};  ///< strictly increasing steps
  std::vector<double> values = {};
  std::string name = "PiecewiseConstant";  ///< Keras's name scope; kept for the config
};

/// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
/// values.back() once step > boundaries.back().
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  /// Throws ValueError unless values.size() == boundaries.size() + 1 and boundaries increase.
  explicit PiecewiseConstantDecay(PiecewiseConstantDecayOptions options);
  double operator()(std::int64_t step) const override;
  Tensor operator()(const Tensor& step) const override;
  std::string name() const override { return "PiecewiseConstantDecay"; }
  const PiecewiseConstantDecayOptions& options() const { return options_; }
  /// Keras's keys: the options above, by their names.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; a key Kestrel does not know is a ValueError.
  static PiecewiseConstantDecay from_config(const nlohmann::json& config);

 private:
  PiecewiseConstantDecayOptions options_;
};

/// CosineDecay's options; the first two are required.
struct CosineDecayOptions {
  std::optional<double> initial_learning_rate = std::nullopt;
  std::optional<std::int64_t> decay_steps = std::nullopt;  ///< > 0
  double alpha = 0.0;                                      ///< the final rate as a fraction of the decay's start
  std::optional<double> warmup_target = std::nullopt;      ///< set: warm up linearly to it, then decay from it
  std::int64_t warmup_steps = 0;                           ///< >= 0
  std::string name = "CosineDecay";                        ///< Keras's name scope; kept for the config
};

/// Without warm-up: initial * ((1 - alpha) * c + alpha), c = 0.5 * (1 + cos(pi * min(step, decay_steps) /
/// decay_steps)). With warmup_target: a line from initial to warmup_target over warmup_steps, then the same cosine
/// from warmup_target down to alpha * warmup_target over the next decay_steps.
class CosineDecay : public LearningRateSchedule {
 public:
  /// Throws ValueError naming the option when one is missing or out of range.
  explicit CosineDecay(CosineDecayOptions options);
  double operator()(std::int64_t step) const override;
  Tensor operator()(const Tensor& step) const override;
  std::string name() const override { return "CosineDecay"; }
  const CosineDecayOptions& options() const { return options_; }
  /// Keras's keys: the options above, by their names.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; a key Kestrel does not know is a ValueError.
  static CosineDecay from_config(const nlohmann::json& config);

 private:
  CosineDecayOptions options_;
};

}  // namespace kestrel::optimizers::schedules
