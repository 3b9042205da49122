// All optimizers and learning-rate schedules (kestrel::optimizers) in one include.
//
//   #include "framework/optimizers/optimizers.h"
//   model.compile({.optimizer = optimizers::AdamW({.learning_rate = 1e-3, .weight_decay = 0.01})});
//   model.compile({.optimizer = "adam"});                     // optimizers::get with Keras defaults
#pragma once

#include "framework/optimizers/adam.h"
#include "framework/optimizers/adamw.h"
#include "framework/optimizers/learning_rate.h"
#include "framework/optimizers/optimizer.h"
#include "framework/optimizers/rmsprop.h"
#include "framework/optimizers/schedules.h"
#include "framework/optimizers/sgd.h"
