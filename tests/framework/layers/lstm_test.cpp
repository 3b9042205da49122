// LSTM: Keras's weights and equations, unrolled and as a loop op, eager and compiled.
#include "framework/layers/lstm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/dense.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/lstm_cell.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/framework/layers/recurrent_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/step_allocations.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using namespace testing::recurrent;  // NOLINT(google-build-using-namespace): the sizes and inputs every case uses

// Random weights everywhere (the bias too), so no term of the equations hides behind a zero.
void randomize(const layers::LSTM& lstm) {
  std::uint64_t seed = 40;
  for (const Variable& w : lstm.weights()) w.assign(random::uniform(w.shape(), random::Key(seed++), -0.6, 0.6));
}

// Keras's LSTMCell, in double precision with plain loops: h after each step, in the order the steps
// run, for x [batch, time, features].
std::vector<std::vector<double>> keras_lstm(const Tensor& x, const layers::LSTM& lstm, bool go_backwards) {
  const std::vector<double> in = x.to_vector<double>();
  const std::vector<double> kernel = lstm.kernel().value().to_vector<double>();
  const std::vector<double> recurrent = lstm.recurrent_kernel().value().to_vector<double>();
  const std::vector<double> bias =
      lstm.bias().defined() ? lstm.bias().value().to_vector<double>() : std::vector<double>(4 * kUnits, 0.0);
  const std::int64_t batch = x.shape()[0], steps = x.shape()[1], features = x.shape()[2], u = kUnits;
  std::vector<double> h(static_cast<std::size_t>(batch * u), 0.0), c = h;
  std::vector<std::vector<double>> outputs;
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t t = go_backwards ? steps - 1 - s : s;
    std::vector<double> next_h = h, next_c = c;
    for (std::int64_t b = 0; b < batch; ++b) {
      std::vector<double> z(static_cast<std::size_t>(4 * u));
      for (std::int64_t j = 0; j < 4 * u; ++j) {
        double sum = bias[static_cast<std::size_t>(j)];
        for (std::int64_t f = 0; f < features; ++f)
          sum += in[static_cast<std::size_t>((b * steps + t) * features + f)] *
                 kernel[static_cast<std::size_t>(f * 4 * u + j)];
        for (std::int64_t i = 0; i < u; ++i)
          sum += h[static_cast<std::size_t>(b * u + i)] * recurrent[static_cast<std::size_t>(i * 4 * u + j)];
        z[static_cast<std::size_t>(j)] = sum;
      }
      for (std::int64_t j = 0; j < u; ++j) {
        const auto at = [&](std::int64_t gate) { return z[static_cast<std::size_t>(gate * u + j)]; };
        const double i_gate = testing::sigmoid(at(0)), f_gate = testing::sigmoid(at(1));
        const double g = std::tanh(at(2)), o_gate = testing::sigmoid(at(3));
        const auto k = static_cast<std::size_t>(b * u + j);
        next_c[k] = f_gate * c[k] + i_gate * g;
        next_h[k] = o_gate * std::tanh(next_c[k]);
      }
    }
    h = next_h;
    c = next_c;
    outputs.push_back(h);
  }
  return outputs;
}

TEST(LSTM, WeightsAsKerasNamesThem) {
  layers::LSTM lstm(kUnits, {.name = "encoder"});
  lstm(sequences());
  const std::vector<Variable> weights = lstm.weights();
  ASSERT_EQ(weights.size(), 3u);
  EXPECT_EQ(weights[0].name(), "encoder/lstm_cell/kernel");
  EXPECT_EQ(weights[0].shape(), Shape({kFeatures, 4 * kUnits}));
  EXPECT_EQ(weights[1].name(), "encoder/lstm_cell/recurrent_kernel");
  EXPECT_EQ(weights[1].shape(), Shape({kUnits, 4 * kUnits}));
  EXPECT_EQ(weights[2].name(), "encoder/lstm_cell/bias");
  EXPECT_EQ(weights[2].shape(), Shape({4 * kUnits}));
  EXPECT_TRUE(lstm.kernel().is_same(weights[0]));
  EXPECT_TRUE(lstm.recurrent_kernel().is_same(weights[1]));
  EXPECT_TRUE(lstm.bias().is_same(weights[2]));
  EXPECT_EQ(lstm.count_params(), kFeatures * 4 * kUnits + kUnits * 4 * kUnits + 4 * kUnits);
}

TEST(LSTM, HoldsItsWeightsInACellAsKerasDoes) {
  clear_session();
  const testing::GlobalRandomStreamGuard restore;  // the tests that follow start from the same stream
  Sequential model({layers::LSTM(kUnits, {.return_sequences = true}), layers::LSTM(kUnits)});
  model(sequences());
  const Layer& first = *model.layers()[0];
  // Keras's LSTM: self.cell = LSTMCell(..., name="lstm_cell"), and no weights of its own.
  ASSERT_EQ(first.layers().size(), 1u);
  EXPECT_EQ(first.layers()[0]->name(), "lstm_cell");
  EXPECT_EQ(first.layers()[0]->class_name(), "LSTMCell");
  EXPECT_EQ(first.child_attributes(), std::vector<std::string>{"cell"});
  EXPECT_TRUE(first.own_weights().empty());
  EXPECT_EQ(first.layers()[0]->own_weights().size(), 3u);
  // Every cell is "lstm_cell", as in Keras: the layer's unique name tells them apart.
  std::vector<std::string> names;
  for (const Variable& w : model.weights()) names.push_back(w.name());
  EXPECT_EQ(names, (std::vector<std::string>{"lstm/lstm_cell/kernel", "lstm/lstm_cell/recurrent_kernel",
                                             "lstm/lstm_cell/bias", "lstm_1/lstm_cell/kernel",
                                             "lstm_1/lstm_cell/recurrent_kernel", "lstm_1/lstm_cell/bias"}));
  // Freezing the layer freezes its cell's weights.
  model.layers()[1]->set_trainable(false);
  EXPECT_EQ(model.trainable_weights().size(), 3u);
  EXPECT_EQ(model.non_trainable_weights().size(), 3u);
  EXPECT_FALSE(model.non_trainable_weights()[0].trainable());
  EXPECT_EQ(model.non_trainable_weights()[0].name(), "lstm_1/lstm_cell/kernel");
}

TEST(LSTM, TheCellTakesTheLayersPrecisionPolicy) {
  const testing::GlobalRandomStreamGuard restore;  // the tests that follow start from the same stream
  // Given to the LSTM: the cell's weights are made and read in it.
  layers::LSTM given(kUnits, {.dtype = DTypePolicy("bfloat16")});
  EXPECT_EQ(given(sequences()).dtype(), DType::bfloat16);
  EXPECT_EQ(given.kernel().dtype(), DType::bfloat16);
  EXPECT_EQ(given.cell().dtype_policy().name(), "bfloat16");
  // Passed down by the model that adopts the LSTM, through the LSTM to its cell.
  layers::LSTM adopted(kUnits);
  const mixed_precision::PolicyScope mixed("mixed_bfloat16");
  Sequential model;
  model.add(std::move(adopted));
  Layer& lstm = *model.layers()[0];
  EXPECT_EQ(lstm(sequences()).dtype(), DType::bfloat16);
  EXPECT_EQ(lstm.layers()[0]->compute_dtype(), DType::bfloat16);
  EXPECT_EQ(model.weights()[0].name(), model.layers()[0]->name() + "/lstm_cell/kernel");
  EXPECT_EQ(model.weights()[0].dtype(), DType::float32);
}

TEST(LSTM, InitializersAreKeras) {
  layers::LSTM lstm(kUnits);
  lstm(sequences());
  // glorot_uniform: within sqrt(6 / (fan_in + fan_out)), and not all zero.
  const double limit = std::sqrt(6.0 / static_cast<double>(kFeatures + 4 * kUnits));
  double largest = 0;
  for (double v : lstm.kernel().value().to_vector<double>()) largest = std::max(largest, std::fabs(v));
  EXPECT_LE(largest, limit);
  EXPECT_GT(largest, limit / 4);
  // orthogonal: a wide [units, 4 * units] matrix has orthonormal rows, R R^T = I.
  const Tensor r = lstm.recurrent_kernel().value();
  const std::vector<double> gram = ops::matmul(r, ops::transpose(r)).to_vector<double>();
  for (std::int64_t i = 0; i < kUnits; ++i) {
    for (std::int64_t j = 0; j < kUnits; ++j)
      EXPECT_NEAR(gram[static_cast<std::size_t>(i * kUnits + j)], i == j ? 1.0 : 0.0, 1e-5) << i << "," << j;
  }
  // unit_forget_bias: zeros, except ones for the forget gate (the second quarter).
  const std::vector<double> bias = lstm.bias().value().to_vector<double>();
  for (std::int64_t j = 0; j < 4 * kUnits; ++j) {
    EXPECT_EQ(bias[static_cast<std::size_t>(j)], j >= kUnits && j < 2 * kUnits ? 1.0 : 0.0) << j;
  }
}

TEST(LSTM, BiasOptions) {
  layers::LSTM plain(kUnits, {.unit_forget_bias = false});
  plain(sequences());
  for (double v : plain.bias().value().to_vector<double>()) EXPECT_EQ(v, 0.0);
  layers::LSTM forget_and_ones(kUnits, {.bias_initializer = "ones"});
  forget_and_ones(sequences());
  for (double v : forget_and_ones.bias().value().to_vector<double>()) EXPECT_EQ(v, 1.0);
  layers::LSTM none(kUnits, {.use_bias = false});
  none(sequences());
  EXPECT_FALSE(none.bias().defined());
  EXPECT_EQ(none.weights().size(), 2u);
}

TEST(LSTM, MatchesKerasEquationsUnrolledAndLooped) {
  const Tensor x = sequences();
  for (const bool unroll : {false, true}) {
    for (const bool return_sequences : {false, true}) {
      for (const bool go_backwards : {false, true}) {
        layers::LSTM lstm(kUnits,
                          {.return_sequences = return_sequences, .go_backwards = go_backwards, .unroll = unroll});
        lstm(x);
        randomize(lstm);
        const std::string what = std::string("unroll=") + (unroll ? "true" : "false") +
                                 " return_sequences=" + (return_sequences ? "true" : "false") +
                                 " go_backwards=" + (go_backwards ? "true" : "false");
        const Shape shape = return_sequences ? Shape{kBatch, kSteps, kUnits} : Shape{kBatch, kUnits};
        testing::expect_close(lstm(x), expected_output(keras_lstm(x, lstm, go_backwards), return_sequences), shape,
                              1e-5, what);
      }
    }
  }
}

TEST(LSTM, WithoutBiasAndWithOtherActivations) {
  const Tensor x = sequences(3);
  layers::LSTM lstm(kUnits, {.activation = "relu", .recurrent_activation = "tanh", .use_bias = false});
  lstm(x);
  randomize(lstm);
  // relu and tanh for tanh and sigmoid: recompute the reference with them.
  const std::vector<double> in = x.to_vector<double>(), kernel = lstm.kernel().value().to_vector<double>(),
                            recurrent = lstm.recurrent_kernel().value().to_vector<double>();
  std::vector<double> h(kBatch * kUnits, 0.0), c = h;
  for (std::int64_t t = 0; t < kSteps; ++t) {
    std::vector<double> next_h = h, next_c = c;
    for (std::int64_t b = 0; b < kBatch; ++b) {
      for (std::int64_t j = 0; j < kUnits; ++j) {
        double z[4];
        for (int gate = 0; gate < 4; ++gate) {
          const std::int64_t col = gate * kUnits + j;
          double sum = 0;
          for (std::int64_t f = 0; f < kFeatures; ++f)
            sum += in[static_cast<std::size_t>((b * kSteps + t) * kFeatures + f)] *
                   kernel[static_cast<std::size_t>(f * 4 * kUnits + col)];
          for (std::int64_t i = 0; i < kUnits; ++i)
            sum +=
                h[static_cast<std::size_t>(b * kUnits + i)] * recurrent[static_cast<std::size_t>(i * 4 * kUnits + col)];
          z[gate] = sum;
        }
        const auto k = static_cast<std::size_t>(b * kUnits + j);
        next_c[k] = std::tanh(z[1]) * c[k] + std::tanh(z[0]) * std::max(0.0, z[2]);
        next_h[k] = std::tanh(z[3]) * std::max(0.0, next_c[k]);
      }
    }
    h = next_h;
    c = next_c;
  }
  testing::expect_close(lstm(x), h, {kBatch, kUnits}, 1e-5, "relu/tanh LSTM");
}

TEST(LSTM, UnrolledAndLoopedGiveTheSameValuesAndGradients) {
  const Tensor x = sequences(5);
  for (const bool return_sequences : {false, true}) {
    layers::LSTM looped(kUnits, {.return_sequences = return_sequences, .go_backwards = true});
    layers::LSTM unrolled(kUnits, {.return_sequences = return_sequences, .go_backwards = true, .unroll = true});
    looped(x);
    unrolled(x);
    randomize(looped);
    testing::expect_same_values_and_gradients(looped, unrolled, x);
  }
}

TEST(LSTM, InputGradientsMatchFiniteDifferences) {
  for (const bool unroll : {false, true}) {
    layers::LSTM lstm(kUnits, {.return_sequences = true, .unroll = unroll});
    const Tensor x = sequences(7);
    lstm(x);
    randomize(lstm);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return lstm(in[0]); }, {x});
    EXPECT_TRUE(r.ok) << (unroll ? "unrolled: " : "looped: ") << r.report;
  }
}

TEST(LSTM, WeightGradientsMatchFiniteDifferences) {
  for (const bool unroll : {false, true}) {
    layers::LSTM lstm(kUnits, {.go_backwards = true, .unroll = unroll});
    const Tensor x = sequences(8);
    lstm(x);
    randomize(lstm);
    const GradcheckResult r = testing::weight_gradcheck([&] { return lstm(x); }, lstm.weights());
    EXPECT_TRUE(r.ok) << (unroll ? "unrolled: " : "looped: ") << r.report;
  }
}

TEST(LSTM, CompiledMatchesEager) {
  for (const bool unroll : {false, true}) {
    for (const bool return_sequences : {false, true}) {
      SCOPED_TRACE(std::string("unroll=") + (unroll ? "true" : "false") +
                   " return_sequences=" + (return_sequences ? "true" : "false"));
      layers::LSTM lstm(kUnits, {.return_sequences = return_sequences, .unroll = unroll});
      const Tensor x = sequences(9);
      lstm(x);
      randomize(lstm);
      testing::expect_compiled_matches_eager(lstm, x);
    }
  }
}

TEST(LSTM, TheLoopIsCompiledOnceWhateverTheLength) {
  layers::LSTM looped(kUnits);
  layers::LSTM unrolled(kUnits, {.unroll = true});
  const Tensor short_x = random::normal({kBatch, 3, kFeatures}, random::Key(1));
  const Tensor long_x = random::normal({kBatch, 12, kFeatures}, random::Key(2));
  EXPECT_EQ(testing::traced_ops(looped, short_x), testing::traced_ops(looped, long_x));
  EXPECT_GT(testing::traced_ops(unrolled, long_x), 3 * testing::traced_ops(unrolled, short_x));
  EXPECT_LT(testing::traced_ops(looped, long_x), testing::traced_ops(unrolled, long_x) / 4);
}

TEST(LSTM, RunsInMixedBfloat16) {
  const Tensor x = sequences(11);
  layers::LSTM full(kUnits, {.return_sequences = true});
  layers::LSTM mixed(kUnits, {.return_sequences = true, .dtype = DTypePolicy("mixed_bfloat16")});
  full(x);
  mixed(x);
  randomize(full);
  for (std::size_t i = 0; i < 3; ++i) mixed.weights()[i].assign(full.weights()[i].value());
  const Tensor y = mixed(x);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(mixed.kernel().dtype(), DType::float32);
  testing::expect_close(ops::cast(y, DType::float32), full(x), 0.05, "mixed_bfloat16 against float32");
  testing::expect_compiled_matches_eager(mixed, x);
}

TEST(LSTM, LearnsTheSignOfASumUnderJitCompile) {
  EXPECT_GE(testing::sum_sign_accuracy(layers::LSTM(8), 5, 21, 22), 0.9);
}

TEST(LSTM, ASteadyCompiledTrainingStepAllocatesNothing) {
  const auto [x, y] = testing::sum_sign_task(320, 6, random::Key(23));
  Sequential model({layers::LSTM(8, {.return_sequences = true}), layers::LSTM(8), layers::Dense(1)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse", .jit_compile = true});
  testing::StepAllocations steps;
  model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0, .callbacks = {steps.callback()}});
  const std::vector<std::int64_t>& allocations = steps.per_step();
  ASSERT_EQ(allocations.size(), 10u);
  // The loops' bodies run in executors of their own, whose buffers are reused from step to step.
  for (std::size_t step = 2; step < allocations.size(); ++step) EXPECT_EQ(allocations[step], 0) << "step " << step;
}

TEST(LSTM, BuildsAFunctionalModel) {
  // Called on Keras tensors, the layers trace their loops to infer their outputs' shapes.
  layers::LSTM first(kUnits, {.return_sequences = true});
  layers::LSTM second(kUnits);
  layers::Dense head(1);
  const Tensor inputs = Input({kSteps, kFeatures});
  Model model(inputs, head(second(first(inputs))));
  const Tensor x = sequences(12);
  const Tensor y = model(x);
  EXPECT_EQ(y.shape(), Shape({kBatch, 1}));
  testing::expect_close(y, head(second(first(x))), 1e-6, "functional model");
}

TEST(LSTM, BadInputsNameTheLayer) {
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { layers::LSTM(0, {.name = "rnn"}); }), "layer 'rnn' (LSTM): units is 0"));
  layers::LSTM lstm(kUnits, {.name = "rnn"});
  EXPECT_TRUE(contains(error_message<ShapeError>([&] {
                         lstm(Tensor::zeros({2, 3}));
                       }),
                       "layer 'rnn' (LSTM): input is [2,3]; LSTM takes sequences [batch, time, features]"));
  lstm(sequences());
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { lstm(Tensor::zeros({2, 5, 7})); }), "built for 3 features"));
}

}  // namespace
}  // namespace kestrel
