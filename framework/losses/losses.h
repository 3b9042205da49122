// All of Kestrel's losses (kestrel::losses) in one include.
//
//   #include "framework/losses/losses.h"
//   model.compile({.loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
//   model.compile({.loss = "mse"});                      // by Keras name, through losses::get
#pragma once

#include "framework/losses/binary_crossentropy.h"
#include "framework/losses/categorical_crossentropy.h"
#include "framework/losses/loss.h"
#include "framework/losses/loss_utils.h"
#include "framework/losses/mean_absolute_error.h"
#include "framework/losses/mean_squared_error.h"
#include "framework/losses/scale_for_distribution.h"
#include "framework/losses/sparse_categorical_crossentropy.h"
