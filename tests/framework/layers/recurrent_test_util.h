// Test support for the recurrent layers (LSTM, GRU): the sizes and inputs their tests share,
// comparing outputs, counting a traced call's ops, and a toy sequence task.
//
//   using namespace testing::recurrent;      // kBatch, kSteps, kFeatures, kUnits, sequences()
//   testing::expect_close(lstm(x), reference, 1e-5, "lstm");
//   testing::traced_ops(lstm, x);            // ops of lstm(x) as the jit traces it
//   auto [x, y] = testing::sum_sign_task(256, 8, random::Key(1));
//   EXPECT_GE(testing::sum_sign_accuracy(layers::LSTM(8), 5, 21, 22), 0.9);   // trains a classifier on it
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/trace.h"
#include "framework/layers/dense.h"
#include "framework/layers/layer.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel::testing {

// The sizes and inputs the LSTM and GRU tests share.
namespace recurrent {

/// 2 sequences of 5 steps of 3 features, into 4 units.
inline constexpr std::int64_t kBatch = 2, kSteps = 5, kFeatures = 3, kUnits = 4;

/// Input sequences [kBatch, kSteps, kFeatures], a fixed function of seed.
inline Tensor sequences(std::uint64_t seed = 1) {
  return random::normal({kBatch, kSteps, kFeatures}, random::Key(seed));
}

/// A layer's expected output from its state after each step (hs, each [kBatch, kUnits]): the last
/// state, or every state as [batch, time, units] when the layer returns sequences.
inline std::vector<double> expected_output(const std::vector<std::vector<double>>& hs, bool return_sequences) {
  if (!return_sequences) return hs.back();
  std::vector<double> out;
  for (std::int64_t b = 0; b < kBatch; ++b) {
    for (const std::vector<double>& h : hs) out.insert(out.end(), h.begin() + b * kUnits, h.begin() + (b + 1) * kUnits);
  }
  return out;
}

}  // namespace recurrent

/// Every element within tolerance * (1 + |want|) of the wanted value, and the same shape.
inline void expect_close(const Tensor& got, const std::vector<double>& want, const Shape& shape, double tolerance,
                         const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_LE(std::fabs(g[i] - want[i]), tolerance * (1.0 + std::fabs(want[i])))
        << what << " element " << i << ": got " << g[i] << ", want " << want[i];
  }
}

inline void expect_close(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  expect_close(got, want.to_vector<double>(), want.shape(), tolerance, what);
}

/// The number of ops the jit records for layer(x) (the layer is built first, eagerly).
inline std::int64_t traced_ops(Layer& layer, const Tensor& x) {
  layer(x);
  jit::Trace trace;
  const jit::TraceScope active(trace);
  const Tensor input = trace.input(x.spec(), "x");
  return trace.finish({layer(input)}).num_ops();
}

/// Does a sequence add up to more than zero? x [n, steps, 1] standard normal, y [n, 1] 1 or 0.
inline std::pair<Tensor, Tensor> sum_sign_task(std::int64_t n, std::int64_t steps, const random::Key& key) {
  const Tensor x = random::normal({n, steps, 1}, key);
  const std::vector<float> v = x.to_vector<float>();
  std::vector<float> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    double total = 0;
    for (std::int64_t t = 0; t < steps; ++t) total += v[static_cast<std::size_t>(i * steps + t)];
    y[static_cast<std::size_t>(i)] = total > 0 ? 1.0f : 0.0f;
  }
  return {x, Tensor::from_vector(y, {n, 1})};
}

/// The layer's output on x, then the gradients of sum(y * y) with respect to x and each weight:
/// what two ways of running a recurrent layer must agree on.
inline std::vector<Tensor> value_and_gradients(Layer& layer, const Tensor& x) {
  GradientTape tape;
  tape.watch(x);
  const Tensor y = layer(x);
  std::vector<Tensor> sources{x};
  for (const Variable& w : layer.weights()) sources.push_back(w.value());
  std::vector<Tensor> out{y};
  for (const Tensor& g : tape.gradient(ops::sum(ops::multiply(y, y)), sources)) out.push_back(g);
  return out;
}

/// Trains Sequential({recurrent, Dense(1, sigmoid)}) under jit_compile on sum_sign_task (512
/// sequences of 8 from train_key, 25 epochs of Adam) from global seed `seed`, and returns its
/// accuracy on 256 sequences from test_key. The global stream is put back afterwards.
inline double sum_sign_accuracy(LayerArg recurrent, std::uint64_t seed, std::uint64_t train_key,
                                std::uint64_t test_key) {
  clear_session();
  const GlobalRandomStreamGuard restore;
  random::set_global_seed(seed);
  const auto [x, y] = sum_sign_task(512, 8, random::Key(train_key));
  Sequential model({std::move(recurrent), layers::Dense(1, {.activation = "sigmoid"})});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                 .loss = "binary_crossentropy",
                 .metrics = {"accuracy"},
                 .jit_compile = true});
  model.fit(x, y, {.batch_size = 64, .epochs = 25, .verbose = 0});
  const auto [x_test, y_test] = sum_sign_task(256, 8, random::Key(test_key));
  return model.evaluate(x_test, y_test, {.verbose = 0}).at("accuracy");
}

/// Two ways of running one layer (looped and unrolled, say) give the same output and gradients
/// within 1e-5 once b has a's weights. Both must be built.
inline void expect_same_values_and_gradients(Layer& a, Layer& b, const Tensor& x) {
  const std::vector<Variable> from = a.weights(), to = b.weights();
  ASSERT_EQ(from.size(), to.size());
  for (std::size_t i = 0; i < from.size(); ++i) to[i].assign(from[i].value());
  const std::vector<Tensor> va = value_and_gradients(a, x), vb = value_and_gradients(b, x);
  for (std::size_t i = 0; i < va.size(); ++i) expect_close(va[i], vb[i], 1e-5, "result " + std::to_string(i));
}

/// sigmoid in double, for references.
inline double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace kestrel::testing
