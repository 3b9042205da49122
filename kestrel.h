// Kestrel: one include for the whole public API.
//
//   #include "kestrel.h"
//   using namespace kestrel;
//   Tensor x = random::normal({4, 3}, random::Key(0));
//   auto [loss, grads] = value_and_grad([](auto& a) { return ops::sum(ops::square(a[0])); }, {x});
#pragma once
#include "datasets/builtin/fashion_mnist.h"
#include "datasets/io/idx.h"
#include "datasets/tfrecord/tfrecord.h"
#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/autodiff/value_and_grad.h"
#include "framework/callbacks/callbacks.h"
#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/shape.h"
#include "framework/core/tensor.h"
#include "framework/core/thread_pool.h"
#include "framework/core/variable.h"
#include "framework/data/dataset.h"
#include "framework/layers/layers.h"
#include "framework/logging/logging.h"
#include "framework/losses/losses.h"
#include "framework/metrics/metrics.h"
#include "framework/model/model.h"
#include "framework/model/progress_bar.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
