#include "framework/layers/conv1d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/dtype_policy.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// The sequence [1, 5 or 7 steps, 1 channel] holding 1, 2, 3, ...
Tensor counting(int steps) {
  std::vector<float> v(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
  return Tensor::from_vector(v, {1, steps, 1});
}

// A 3-tap, 1-channel Conv1D whose taps are 1, 10 and 100, so each output digit names the input
// step it came from.
std::vector<float> taps_1_10_100(layers::Conv1DOptions options, int steps) {
  options.use_bias = false;
  layers::Conv1D conv(1, 3, std::move(options));
  Tensor x = counting(steps);
  conv(x);
  conv.kernel().assign(Tensor::from_vector<float>({1, 10, 100}, {3, 1, 1}));
  return conv(x).to_vector<float>();
}

// Keras's convolution written out: out[n, t, f] = bias[f] + sum over taps j and channels c of
// x[n, t * strides + j * dilation - pad_before, c] * kernel[j, c, f], zero outside x.
std::vector<float> naive_conv1d(const Tensor& x_tensor, const Tensor& kernel_tensor, const Tensor& bias_tensor,
                                const layers::Conv1DOptions& o, std::int64_t* out_steps) {
  const std::vector<float> x = x_tensor.to_vector<float>();
  const std::vector<float> kernel = kernel_tensor.to_vector<float>();
  const std::vector<float> bias = bias_tensor.to_vector<float>();
  const std::int64_t n = x_tensor.shape()[0], steps = x_tensor.shape()[1], in = x_tensor.shape()[2];
  const std::int64_t taps = kernel_tensor.shape()[0], filters = kernel_tensor.shape()[2];
  const std::int64_t span = o.dilation_rate * (taps - 1) + 1;
  std::int64_t before = 0;
  std::int64_t out = 0;
  if (o.padding == "valid") {
    out = (steps - span) / o.strides + 1;
  } else if (o.padding == "same") {
    out = (steps + o.strides - 1) / o.strides;
    before = std::max<std::int64_t>((out - 1) * o.strides + span - steps, 0) / 2;
  } else {
    before = span - 1;
    out = (steps + before - span) / o.strides + 1;
  }
  *out_steps = out;
  std::vector<float> y(static_cast<std::size_t>(n * out * filters));
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t t = 0; t < out; ++t) {
      for (std::int64_t f = 0; f < filters; ++f) {
        double acc = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(f)];
        for (std::int64_t j = 0; j < taps; ++j) {
          const std::int64_t s = t * o.strides + j * o.dilation_rate - before;
          if (s < 0 || s >= steps) continue;
          for (std::int64_t c = 0; c < in; ++c) {
            acc += static_cast<double>(x[static_cast<std::size_t>((b * steps + s) * in + c)]) *
                   kernel[static_cast<std::size_t>((j * in + c) * filters + f)];
          }
        }
        y[static_cast<std::size_t>((b * out + t) * filters + f)] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

TEST(Conv1D, ClassNameDefaultsAndWeightsFollowKeras) {
  clear_session();
  layers::Conv1D conv(4, 3);
  EXPECT_EQ(conv.class_name(), "Conv1D");
  EXPECT_EQ(conv.name(), "conv1d");
  EXPECT_EQ(layers::Conv1D(4, 3).name(), "conv1d_1");
  EXPECT_EQ(conv.filters(), 4);
  EXPECT_EQ(conv.kernel_size(), 3);
  EXPECT_EQ(conv.options().strides, 1);
  EXPECT_EQ(conv.options().padding, "valid");
  EXPECT_EQ(conv.options().dilation_rate, 1);
  EXPECT_TRUE(conv.options().use_bias);
  EXPECT_EQ(conv.options().kernel_initializer.name(), "glorot_uniform");
  EXPECT_EQ(conv.options().bias_initializer.name(), "zeros");

  EXPECT_EQ(conv(Tensor::ones({2, 10, 5})).shape(), Shape({2, 8, 4}));
  const std::vector<Variable> w = conv.weights();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name(), "conv1d/kernel");
  EXPECT_EQ(w[0].shape(), Shape({3, 5, 4}));
  EXPECT_EQ(w[1].name(), "conv1d/bias");
  EXPECT_EQ(w[1].shape(), Shape({4}));
  EXPECT_EQ(w[1].value().to_vector<float>(), std::vector<float>(4, 0.0f));
  // glorot_uniform: within +-sqrt(6 / (fan_in + fan_out)), fan_in = 3 * 5, fan_out = 3 * 4.
  const double limit = std::sqrt(6.0 / (15 + 12));
  for (float k : w[0].value().to_vector<float>()) EXPECT_LE(std::fabs(k), limit);
  EXPECT_EQ(conv.count_params(), 3 * 5 * 4 + 4);

  layers::Conv1D no_bias(2, 1, {.use_bias = false});
  no_bias(Tensor::ones({1, 3, 2}));
  EXPECT_EQ(no_bias.weights().size(), 1u);
  EXPECT_FALSE(no_bias.bias().defined());
}

TEST(Conv1D, OutputStepsForEachPaddingStrideAndDilation) {
  const Tensor x = Tensor::ones({2, 10, 3});
  EXPECT_EQ(layers::Conv1D(4, 3)(x).shape(), Shape({2, 8, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.padding = "same"})(x).shape(), Shape({2, 10, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.padding = "causal"})(x).shape(), Shape({2, 10, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.strides = 2})(x).shape(), Shape({2, 4, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.strides = 3, .padding = "same"})(x).shape(), Shape({2, 4, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.strides = 2, .padding = "causal"})(x).shape(), Shape({2, 5, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.dilation_rate = 4})(x).shape(), Shape({2, 2, 4}));
  EXPECT_EQ(layers::Conv1D(4, 3, {.padding = "same", .dilation_rate = 3})(x).shape(), Shape({2, 10, 4}));
  EXPECT_EQ(layers::Conv1D(4, 2, {.padding = "causal", .dilation_rate = 4})(x).shape(), Shape({2, 10, 4}));
}

TEST(Conv1D, HandComputedValues) {
  // Input 1, 2, 3, ...; taps 1, 10, 100: output t is x[a] + 10 x[b] + 100 x[c] for its three steps.
  EXPECT_EQ(taps_1_10_100({}, 5), (std::vector<float>{321, 432, 543}));
  EXPECT_EQ(taps_1_10_100({.padding = "same"}, 5), (std::vector<float>{210, 321, 432, 543, 54}));
  EXPECT_EQ(taps_1_10_100({.padding = "causal"}, 5), (std::vector<float>{100, 210, 321, 432, 543}));
  EXPECT_EQ(taps_1_10_100({.strides = 2}, 7), (std::vector<float>{321, 543, 765}));
  // 5 steps at stride 2 give 3 outputs; "same" pads one zero on each side.
  EXPECT_EQ(taps_1_10_100({.strides = 2, .padding = "same"}, 5), (std::vector<float>{210, 432, 54}));
  // Dilation 2: the taps read steps t, t + 2 and t + 4.
  EXPECT_EQ(taps_1_10_100({.dilation_rate = 2}, 7), (std::vector<float>{531, 642, 753}));
  EXPECT_EQ(taps_1_10_100({.padding = "same", .dilation_rate = 2}, 7),
            (std::vector<float>{310, 420, 531, 642, 753, 64, 75}));
  // Causal pads dilation * (kernel_size - 1) = 4 zeros before the first step.
  EXPECT_EQ(taps_1_10_100({.padding = "causal", .dilation_rate = 2}, 7),
            (std::vector<float>{100, 200, 310, 420, 531, 642, 753}));
}

TEST(Conv1D, MatchesTheConvolutionWrittenOut) {
  struct Case {
    int kernel_size;
    layers::Conv1DOptions options;
  };
  const std::vector<Case> cases = {
      {3, {}},
      {3, {.strides = 2}},
      {4, {.strides = 3, .padding = "same"}},
      {2, {.padding = "same"}},
      {3, {.strides = 2, .padding = "causal"}},
      {3, {.dilation_rate = 2}},
      {2, {.padding = "same", .dilation_rate = 3}},
      {3, {.padding = "same", .dilation_rate = 2}},
      {3, {.padding = "causal", .dilation_rate = 3}},
      {1, {.padding = "causal", .dilation_rate = 5}},
      {4, {.dilation_rate = 4}},  // 13 steps span exactly the 13 the kernel reaches
  };
  const Tensor x = random::normal({2, 13, 3}, random::Key(11));
  for (const Case& c : cases) {
    const std::string label = "kernel " + std::to_string(c.kernel_size) + ", strides " +
                              std::to_string(c.options.strides) + ", padding " + c.options.padding + ", dilation " +
                              std::to_string(c.options.dilation_rate);
    layers::Conv1D conv(5, c.kernel_size, c.options);
    conv(x);
    conv.bias().assign(random::normal({5}, random::Key(12)));
    const Tensor y = conv(x);
    std::int64_t steps = 0;
    const std::vector<float> want = naive_conv1d(x, conv.kernel().value(), conv.bias().value(), c.options, &steps);
    ASSERT_EQ(y.shape(), Shape({2, steps, 5})) << label;
    const std::vector<float> got = y.to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << label << " element " << i;
  }
}

TEST(Conv1D, AppliesTheActivationAfterTheBias) {
  layers::Conv1D conv(1, 1, {.activation = "relu", .bias_initializer = "ones"});
  const Tensor x = Tensor::from_vector<float>({-3, -1, 0, 2}, {1, 4, 1});
  conv(x);
  conv.kernel().assign(Tensor::from_vector<float>({1}, {1, 1, 1}));
  EXPECT_EQ(conv(x).to_vector<float>(), (std::vector<float>{0, 0, 1, 3}));
}

TEST(Conv1D, GradientsOfInputAndWeights) {
  const std::vector<std::pair<int, layers::Conv1DOptions>> configs = {
      {3, {.strides = 2, .activation = "tanh"}},
      {3, {.padding = "same", .dilation_rate = 2, .activation = "tanh"}},
      {2, {.padding = "causal", .dilation_rate = 3, .activation = "tanh"}},
      {4, {.strides = 3, .padding = "same"}},
  };
  const Tensor x = random::normal({2, 9, 2}, random::Key(1));
  for (const auto& [kernel_size, options] : configs) {
    layers::Conv1D conv(3, kernel_size, options);
    conv(x);
    conv.bias().assign(random::normal({3}, random::Key(2)));
    const std::string label = "padding " + options.padding + ", dilation " + std::to_string(options.dilation_rate);
    GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return conv(a[0]); }, {x});
    EXPECT_TRUE(r.ok) << label << ": " << r.report;
    GradcheckResult w = testing::weight_gradcheck([&] { return conv(x); }, conv.weights());
    EXPECT_TRUE(w.ok) << label << ": " << w.report;
  }
}

TEST(Conv1D, CompiledMatchesEager) {
  const Tensor x = random::normal({2, 11, 3}, random::Key(4));
  layers::Conv1D strided(4, 3, {.strides = 2, .padding = "same", .activation = "relu"});
  testing::expect_compiled_matches_eager(strided, x);
  layers::Conv1D dilated(4, 3, {.padding = "causal", .dilation_rate = 2, .bias_initializer = "ones"});
  testing::expect_compiled_matches_eager(dilated, x);
}

TEST(Conv1D, MixedBfloat16ComputesInBfloat16OnFloat32Weights) {
  layers::Conv1D conv(3, 3, {.padding = "causal", .dilation_rate = 2, .dtype = "mixed_bfloat16"});
  const Tensor x = random::normal({2, 8, 4}, random::Key(5));
  const Tensor y = conv(x);
  EXPECT_EQ(conv.kernel().dtype(), DType::float32);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.shape(), Shape({2, 8, 3}));
  // The float32 convolution of the rounded operands, within bfloat16's rounding of the result.
  auto rounded = [](const Tensor& t) { return ops::cast(ops::cast(t, DType::bfloat16), DType::float32); };
  std::int64_t steps = 0;
  const std::vector<float> want =
      naive_conv1d(rounded(x), rounded(conv.kernel().value()), conv.bias().value(), conv.options(), &steps);
  const std::vector<float> got = ops::cast(y, DType::float32).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.05) << "element " << i;
}

TEST(Conv1D, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  layers::Conv1D conv(4, 3);
  std::string m = error_message<ShapeError>([&] { conv(Tensor::ones({2, 28})); });
  EXPECT_TRUE(contains(m, "layer 'conv1d' (Conv1D)")) << m;
  EXPECT_TRUE(contains(m, "[2,28]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims(x, -1)")) << m;
  m = error_message<ShapeError>([&] { conv(Tensor::ones({2, 8, 8, 1})); });
  EXPECT_TRUE(contains(m, "use Conv2D")) << m;

  conv(Tensor::ones({1, 6, 3}));
  m = error_message<ShapeError>([&] { conv(Tensor::ones({1, 6, 2})); });
  EXPECT_TRUE(contains(m, "[1,6,2]")) << m;
  EXPECT_TRUE(contains(m, "[3,3,4]")) << m;

  layers::Conv1D dilated(4, 3, {.dilation_rate = 3});
  m = error_message<ShapeError>([&] { dilated(Tensor::ones({1, 6, 2})); });
  EXPECT_TRUE(contains(m, "(Conv1D): input is [1,6,2]: its 6 steps are fewer than the 7 the kernel spans")) << m;
  EXPECT_TRUE(contains(m, "padding \"same\" or \"causal\"")) << m;

  m = error_message<ValueError>([] { layers::Conv1D(4, 3, {.padding = "full"}); });
  EXPECT_TRUE(contains(m, "(Conv1D): unknown padding 'full': expected \"valid\", \"same\" or \"causal\"")) << m;
  m = error_message<ValueError>([] { layers::Conv1D(4, 3, {.strides = 2, .dilation_rate = 2}); });
  EXPECT_TRUE(contains(m, "strides is 2 and dilation_rate is 2")) << m;
  EXPECT_TRUE(contains(m, "set one of them to 1")) << m;
  m = error_message<ValueError>([] { layers::Conv1D(0, 3); });
  EXPECT_TRUE(contains(m, "filters is 0; it must be positive")) << m;
  m = error_message<ValueError>([] { layers::Conv1D(4, 0); });
  EXPECT_TRUE(contains(m, "kernel_size is 0")) << m;
  m = error_message<ValueError>([] { layers::Conv1D(4, 3, {.strides = 0}); });
  EXPECT_TRUE(contains(m, "strides is 0")) << m;
  m = error_message<ValueError>([] { layers::Conv1D(4, 3, {.dilation_rate = -1}); });
  EXPECT_TRUE(contains(m, "dilation_rate is -1")) << m;
}

}  // namespace
}  // namespace kestrel
