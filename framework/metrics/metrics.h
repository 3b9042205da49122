// All of Kestrel's metrics (kestrel::metrics) in one include.
//
//   #include "framework/metrics/metrics.h"
//   model.compile({.loss = "sparse_categorical_crossentropy", .metrics = {"accuracy", metrics::AUC()}});
//   auto acc = metrics::get("accuracy", "sparse_categorical_crossentropy");   // SparseCategoricalAccuracy
#pragma once

#include "framework/metrics/accuracy.h"
#include "framework/metrics/confusion_metrics.h"
#include "framework/metrics/mean.h"
#include "framework/metrics/metric.h"
#include "framework/metrics/regression.h"
