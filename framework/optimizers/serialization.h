// Keras configs for optimizers and learning-rate schedules: the objects a Keras 3 model's compile
// config holds, written and read back.
//
//   nlohmann::json adam = optimizers::serialize(optimizers::Adam({.learning_rate = 0.25, .amsgrad = true}));
//   // {"module": "keras.optimizers", "class_name": "Adam", "registered_name": null,
//   //  "config": {"name": "adam", "learning_rate": 0.25, "amsgrad": true, "use_ema": false, ...}}
//   std::shared_ptr<optimizers::Optimizer> copy = optimizers::deserialize(adam);  // same options, no slots yet
//   optimizers::deserialize("adam");                                              // a bare name, as Keras takes
//
// A learning rate that follows a schedule is written as the schedule's own Keras object
// ({"module": "keras.optimizers.schedules", "class_name": "CosineDecay", ...}) and read back as
// that schedule. Reading is as strict as Keras: a key the class does not take is a ValueError
// naming the class and the key, and so is an option Kestrel lacks (use_ema, loss_scale_factor)
// set to a value that would change training.
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "framework/optimizers/learning_rate.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::optimizers {

/// {"module": "keras.optimizers", "class_name", "config": get_config(), "registered_name": null}.
/// Throws ValueError for an optimizer whose class is not one of Kestrel's (SGD, Adam, AdamW,
/// RMSprop): there is no Keras class to read it back as.
nlohmann::json serialize(const Optimizer& optimizer);
/// An optimizer from its Keras object (the class name in any case, as Keras reads it) or from a
/// bare name as optimizers::get takes it ("adam"). It has no slots until its first step.
std::shared_ptr<Optimizer> deserialize(const nlohmann::json& config);

namespace schedules {

/// {"module": "keras.optimizers.schedules", "class_name", "config", "registered_name": null}.
/// Throws ValueError for a schedule whose class is not one of Kestrel's.
nlohmann::json serialize(const LearningRateSchedule& schedule);
/// A schedule from its Keras object; an unknown class is a ValueError listing Kestrel's.
std::shared_ptr<LearningRateSchedule> deserialize(const nlohmann::json& config);

}  // namespace schedules
}  // namespace kestrel::optimizers
