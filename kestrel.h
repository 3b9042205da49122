// Kestrel: one include for the whole public API.
//
//   #include "kestrel.h"
//   using namespace kestrel;
//   Tensor x = random::normal({4, 3}, random::Key(0));
//   auto [loss, grads] = value_and_grad([](auto& a) { return ops::sum(ops::square(a[0])); }, {x});
#pragma once

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/autodiff/value_and_grad.h"
#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/shape.h"
#include "framework/core/tensor.h"
#include "framework/core/thread_pool.h"
#include "framework/logging/logging.h"
#include "framework/ops/ops.h"
