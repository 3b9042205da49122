// All of Kestrel's callbacks, as keras.callbacks.
//
//   #include "framework/callbacks/callbacks.h"
//   model.fit(x, y, {.epochs = 20, .validation_split = 0.1,
//                    .callbacks = {callbacks::EarlyStopping({.patience = 3, .restore_best_weights = true}),
//                                  callbacks::ModelCheckpoint("best.weights.h5", {.save_best_only = true}),
//                                  callbacks::TensorBoard({.log_dir = "logs"}),
//                                  callbacks::CSVLogger("training.log")}});
#pragma once

#include "framework/callbacks/backup_and_restore.h"
#include "framework/callbacks/csv_logger.h"
#include "framework/callbacks/early_stopping.h"
#include "framework/callbacks/history.h"
#include "framework/callbacks/lambda_callback.h"
#include "framework/callbacks/learning_rate_scheduler.h"
#include "framework/callbacks/model_checkpoint.h"
#include "framework/callbacks/reduce_lr_on_plateau.h"
#include "framework/callbacks/tensorboard.h"
#include "framework/callbacks/terminate_on_nan.h"
#include "framework/model/callback.h"
