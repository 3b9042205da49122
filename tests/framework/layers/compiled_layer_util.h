// Test support for layers: a layer compiled with jit::Function gives what it gives eagerly, its
// output and its gradients with respect to its input and to each of its weights.
//
//   layers::Conv1D conv(4, 3, {.padding = "causal"});
//   testing::expect_compiled_matches_eager(conv, random::normal({2, 8, 3}, random::Key(0)));
//   testing::expect_compiled_matches_eager(add, std::vector<Tensor>{a, b});  // a layer taking a list
//
// The layer is built before the trace, as a model is before jit_compile traces its step, so the
// weights are the same variables in both runs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/function.h"
#include "framework/layers/layer.h"
#include "framework/ops/ops.h"

namespace kestrel::testing {

/// Eager and compiled runs of `layer` on x agree within 1e-5 (relative), value and gradients.
inline void expect_compiled_matches_eager(Layer& layer, const Tensor& x) {
  const Tensor probe = layer(x);
  const Tensor cotangent = random::normal(probe.shape(), random::Key(17));
  const std::vector<Variable> weights = layer.weights();
  // The output, then d sum(output * cotangent) / d x, then the same for each weight.
  auto value_and_gradients = [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    tape.watch(in[0]);
    const Tensor y = layer(in[0]);
    std::vector<Tensor> sources{in[0]};
    for (const Variable& w : weights) sources.push_back(w.value());
    std::vector<Tensor> results{y};
    for (const Tensor& g : tape.gradient(ops::sum(ops::multiply(ops::cast(y, DType::float32), cotangent)), sources))
      results.push_back(g);
    return results;
  };
  const std::vector<Tensor> eager = value_and_gradients({x});
  jit::Function compiled(value_and_gradients, layer.name());
  const std::vector<Tensor> jit = compiled({x});
  EXPECT_EQ(compiled.compile_count(), 1);
  ASSERT_EQ(jit.size(), eager.size()) << layer.name();
  for (std::size_t i = 0; i < jit.size(); ++i) {
    const std::string what = layer.name() + (i == 0   ? " output"
                                             : i == 1 ? " input gradient"
                                                      : " gradient of " + weights[i - 2].name());
    ASSERT_EQ(jit[i].spec(), eager[i].spec()) << what;
    const std::vector<double> a = jit[i].to_vector<double>();
    const std::vector<double> b = eager[i].to_vector<double>();
    // A gradient of zeros would pass without checking anything: the chosen input must reach it.
    EXPECT_TRUE(std::any_of(b.begin(), b.end(), [](double v) { return v != 0.0; })) << what << " is all zeros";
    for (std::size_t j = 0; j < a.size(); ++j) {
      ASSERT_LE(std::fabs(a[j] - b[j]), 1e-5 * (1.0 + std::fabs(b[j])))
          << what << " element " << j << ": jit " << a[j] << ", eager " << b[j];
    }
  }
}

/// The same for a layer that takes a list of tensors (Add, Concatenate): its output and its
/// gradients with respect to each input, then to each of its weights.
inline void expect_compiled_matches_eager(Layer& layer, const std::vector<Tensor>& xs) {
  const Tensor probe = layer(xs);
  const Tensor cotangent = random::normal(probe.shape(), random::Key(17));
  const std::vector<Variable> weights = layer.weights();
  auto value_and_gradients = [&](const std::vector<Tensor>& in) {
    GradientTape tape;
    for (const Tensor& x : in) tape.watch(x);
    const Tensor y = layer(in);
    std::vector<Tensor> sources = in;
    for (const Variable& w : weights) sources.push_back(w.value());
    std::vector<Tensor> results{y};
    for (const Tensor& g : tape.gradient(ops::sum(ops::multiply(ops::cast(y, DType::float32), cotangent)), sources))
      results.push_back(g);
    return results;
  };
  const std::vector<Tensor> eager = value_and_gradients(xs);
  jit::Function compiled(value_and_gradients, layer.name());
  const std::vector<Tensor> jit = compiled(xs);
  EXPECT_EQ(compiled.compile_count(), 1);
  ASSERT_EQ(jit.size(), eager.size()) << layer.name();
  for (std::size_t i = 0; i < jit.size(); ++i) {
    const std::string what = layer.name() + (i == 0           ? " output"
                                             : i <= xs.size() ? " gradient of input " + std::to_string(i - 1)
                                                              : " gradient of " + weights[i - 1 - xs.size()].name());
    ASSERT_EQ(jit[i].spec(), eager[i].spec()) << what;
    const std::vector<double> a = jit[i].to_vector<double>();
    const std::vector<double> b = eager[i].to_vector<double>();
    // A gradient of zeros would pass without checking anything: each input must reach the output.
    EXPECT_TRUE(std::any_of(b.begin(), b.end(), [](double v) { return v != 0.0; })) << what << " is all zeros";
    for (std::size_t j = 0; j < a.size(); ++j) {
      ASSERT_LE(std::fabs(a[j] - b[j]), 1e-5 * (1.0 + std::fabs(b[j])))
          << what << " element " << j << ": jit " << a[j] << ", eager " << b[j];
    }
  }
}

}  // namespace kestrel::testing
