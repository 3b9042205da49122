// Learning rates: a constant or a schedule of the step, as Keras optimizers take either.
//
//   optimizers::Adam({.learning_rate = 1e-3});
//   optimizers::Adam({.learning_rate = schedules::CosineDecay({.initial_learning_rate = 1e-3,
//                                                              .decay_steps = 1000})});
//
// A schedule has two forms: of a host step (callbacks, learning_rate()) and of a step tensor,
// computed with ops, which is what the optimizer's update uses so that a traced train step
// follows the schedule without reading the step counter on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "framework/core/handle.h"
#include "framework/core/tensor.h"

namespace kestrel::optimizers {

/// A learning rate as a function of the optimizer's step count (keras.optimizers.schedules).
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(std::int64_t step) const = 0;
  /// The same rate as a float32 scalar tensor, computed with ops from `step`, an integer scalar
  /// tensor (the optimizer's iteration count): traceable, since nothing reads the step's value.
  virtual Tensor operator()(const Tensor& step) const = 0;
  virtual std::string name() const = 0;
  /// The schedule's options under Keras's keys (Keras's get_config), what schedules::serialize
  /// writes (framework/optimizers/serialization.h). The base throws ValueError: a schedule of
  /// one's own has no Keras class to be read back as.
  virtual nlohmann::json get_config() const;
};

class LearningRate {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): learning_rate = 1e-3 or a schedule, as Keras takes it
  LearningRate(double value) : constant_(value) {}
  template <class S, std::enable_if_t<std::is_base_of_v<LearningRateSchedule, std::decay_t<S>>, int> = 0>
  // NOLINTNEXTLINE(google-explicit-constructor): learning_rate = 1e-3 or a schedule, as Keras takes it
  LearningRate(S&& schedule) : schedule_(std::make_shared<std::decay_t<S>>(std::forward<S>(schedule))) {}
  // NOLINTNEXTLINE(google-explicit-constructor): learning_rate = 1e-3 or a schedule, as Keras takes it
  LearningRate(std::shared_ptr<LearningRateSchedule> schedule) : schedule_(std::move(schedule)) {}

  bool is_schedule() const { return schedule_ != nullptr; }
  /// The rate at a step: the schedule's value, or the constant.
  double at(std::int64_t step) const { return schedule_ ? (*schedule_)(step) : constant_; }
  /// The rate at a step tensor, as a float32 scalar tensor.
  Tensor at(const Tensor& step) const { return schedule_ ? (*schedule_)(step) : Tensor::scalar(constant_); }
  const std::shared_ptr<LearningRateSchedule>& schedule() const { return schedule_; }

 private:
  double constant_ = 0.0;
  std::shared_ptr<LearningRateSchedule> schedule_;
};

}  // namespace kestrel::optimizers
