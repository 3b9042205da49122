// Test support for the recurrent layers (LSTM, GRU): comparing outputs, counting a traced call's ops,
// and a toy sequence task.
//
//   testing::expect_close(lstm(x), reference, 1e-5, "lstm");
//   testing::traced_ops(lstm, x);            // ops of lstm(x) as the jit traces it
//   auto [x, y] = testing::sum_sign_task(256, 8, random::Key(1));
//   const testing::GlobalStreamRestorer restore;   // the stream as it was, after the test
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
#include "framework/layers/layer.h"
#include "framework/ops/ops.h"

namespace kestrel::testing {

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

/// Puts the global random stream back as it was when made, so the weights a test creates leave the
/// stream the tests that follow start from as it was.
class GlobalStreamRestorer {
 public:
  GlobalStreamRestorer() : before_(random::global_stream_state()) {}
  ~GlobalStreamRestorer() { random::restore_global_stream(before_); }
  GlobalStreamRestorer(const GlobalStreamRestorer&) = delete;
  GlobalStreamRestorer& operator=(const GlobalStreamRestorer&) = delete;

 private:
  random::GlobalStreamState before_;
};

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

/// sigmoid and tanh in double, for references.
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

inline double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace kestrel::testing
