// GRU: Keras's weights and equations (reset_after and before), unrolled and as a loop op, eager and
// compiled.
#include "framework/layers/gru.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/gru_cell.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/framework/layers/recurrent_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using namespace testing::recurrent;  // NOLINT(google-build-using-namespace): the sizes and inputs every case uses

void randomize(const layers::GRU& gru) {
  std::uint64_t seed = 60;
  for (const Variable& w : gru.weights()) w.assign(random::uniform(w.shape(), random::Key(seed++), -0.6, 0.6));
}

// Keras's GRUCell, in double precision with plain loops: h after each step, in the order the steps
// run, for x [batch, time, features].
std::vector<std::vector<double>> keras_gru(const Tensor& x, const layers::GRU& gru, bool go_backwards) {
  const bool reset_after = gru.options().reset_after;
  const std::int64_t u = kUnits, batch = x.shape()[0], steps = x.shape()[1], features = x.shape()[2];
  const std::vector<double> in = x.to_vector<double>();
  const std::vector<double> kernel = gru.kernel().value().to_vector<double>();
  const std::vector<double> recurrent = gru.recurrent_kernel().value().to_vector<double>();
  std::vector<double> input_bias(3 * u, 0.0), recurrent_bias(3 * u, 0.0);
  if (gru.bias().defined()) {
    const std::vector<double> b = gru.bias().value().to_vector<double>();
    std::copy(b.begin(), b.begin() + 3 * u, input_bias.begin());
    if (reset_after) std::copy(b.begin() + 3 * u, b.end(), recurrent_bias.begin());
  }
  std::vector<double> h(static_cast<std::size_t>(batch * u), 0.0);
  std::vector<std::vector<double>> outputs;
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t t = go_backwards ? steps - 1 - s : s;
    std::vector<double> next = h;
    for (std::int64_t b = 0; b < batch; ++b) {
      // matrix_x = x @ kernel + input_bias; matrix_inner = h @ recurrent_kernel (+ recurrent_bias)
      std::vector<double> mx(3 * u), mi(3 * u);
      for (std::int64_t j = 0; j < 3 * u; ++j) {
        double sx = input_bias[static_cast<std::size_t>(j)], si = recurrent_bias[static_cast<std::size_t>(j)];
        for (std::int64_t f = 0; f < features; ++f)
          sx += in[static_cast<std::size_t>((b * steps + t) * features + f)] *
                kernel[static_cast<std::size_t>(f * 3 * u + j)];
        for (std::int64_t i = 0; i < u; ++i)
          si += h[static_cast<std::size_t>(b * u + i)] * recurrent[static_cast<std::size_t>(i * 3 * u + j)];
        mx[static_cast<std::size_t>(j)] = sx;
        mi[static_cast<std::size_t>(j)] = si;
      }
      std::vector<double> r(u);
      for (std::int64_t j = 0; j < u; ++j) r[static_cast<std::size_t>(j)] = testing::sigmoid(mx[u + j] + mi[u + j]);
      for (std::int64_t j = 0; j < u; ++j) {
        const double z = testing::sigmoid(mx[j] + mi[j]);
        double recurrent_h = 0;
        if (reset_after) {
          recurrent_h = r[static_cast<std::size_t>(j)] * mi[2 * u + j];
        } else {
          // (r * h) @ recurrent_kernel[:, 2u:]
          for (std::int64_t i = 0; i < u; ++i)
            recurrent_h += r[static_cast<std::size_t>(i)] * h[static_cast<std::size_t>(b * u + i)] *
                           recurrent[static_cast<std::size_t>(i * 3 * u + 2 * u + j)];
        }
        const double hh = std::tanh(mx[2 * u + j] + recurrent_h);
        const auto k = static_cast<std::size_t>(b * u + j);
        next[k] = z * h[k] + (1 - z) * hh;
      }
    }
    h = next;
    outputs.push_back(h);
  }
  return outputs;
}

TEST(GRU, WeightsAsKerasNamesThem) {
  layers::GRU gru(kUnits, {.name = "encoder"});
  gru(sequences());
  const std::vector<Variable> weights = gru.weights();
  ASSERT_EQ(weights.size(), 3u);
  EXPECT_EQ(weights[0].name(), "encoder/gru_cell/kernel");
  EXPECT_EQ(weights[0].shape(), Shape({kFeatures, 3 * kUnits}));
  EXPECT_EQ(weights[1].name(), "encoder/gru_cell/recurrent_kernel");
  EXPECT_EQ(weights[1].shape(), Shape({kUnits, 3 * kUnits}));
  EXPECT_EQ(weights[2].name(), "encoder/gru_cell/bias");
  EXPECT_EQ(weights[2].shape(), Shape({2, 3 * kUnits}));  // reset_after: input and recurrent biases
  EXPECT_TRUE(gru.kernel().is_same(weights[0]));
  EXPECT_TRUE(gru.recurrent_kernel().is_same(weights[1]));
  EXPECT_TRUE(gru.bias().is_same(weights[2]));
  // Keras's GRU: self.cell = GRUCell(..., name="gru_cell"), and no weights of its own.
  ASSERT_EQ(gru.layers().size(), 1u);
  EXPECT_EQ(&gru.cell(), gru.layers()[0]);
  EXPECT_EQ(gru.cell().name(), "gru_cell");
  EXPECT_EQ(gru.cell().class_name(), "GRUCell");
  EXPECT_EQ(gru.child_attributes(), std::vector<std::string>{"cell"});
  EXPECT_TRUE(gru.own_weights().empty());
  EXPECT_EQ(gru.count_params(), kFeatures * 3 * kUnits + kUnits * 3 * kUnits + 2 * 3 * kUnits);
  layers::GRU v1(kUnits, {.reset_after = false});
  v1(sequences());
  EXPECT_EQ(v1.bias().shape(), Shape({3 * kUnits}));
  layers::GRU none(kUnits, {.use_bias = false});
  none(sequences());
  EXPECT_EQ(none.weights().size(), 2u);
}

TEST(GRU, InitializersAreKeras) {
  layers::GRU gru(kUnits);
  gru(sequences());
  const double limit = std::sqrt(6.0 / static_cast<double>(kFeatures + 3 * kUnits));
  double largest = 0;
  for (double v : gru.kernel().value().to_vector<double>()) largest = std::max(largest, std::fabs(v));
  EXPECT_LE(largest, limit);
  EXPECT_GT(largest, limit / 4);
  const Tensor r = gru.recurrent_kernel().value();
  const std::vector<double> gram = ops::matmul(r, ops::transpose(r)).to_vector<double>();
  for (std::int64_t i = 0; i < kUnits; ++i) {
    for (std::int64_t j = 0; j < kUnits; ++j)
      EXPECT_NEAR(gram[static_cast<std::size_t>(i * kUnits + j)], i == j ? 1.0 : 0.0, 1e-5) << i << "," << j;
  }
  for (double v : gru.bias().value().to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(GRU, MatchesKerasEquationsUnrolledAndLooped) {
  const Tensor x = sequences();
  for (const bool reset_after : {true, false}) {
    for (const bool unroll : {false, true}) {
      for (const bool return_sequences : {false, true}) {
        for (const bool go_backwards : {false, true}) {
          layers::GRU gru(kUnits, {.return_sequences = return_sequences,
                                   .go_backwards = go_backwards,
                                   .unroll = unroll,
                                   .reset_after = reset_after});
          gru(x);
          randomize(gru);
          const std::string what = std::string("reset_after=") + (reset_after ? "true" : "false") +
                                   " unroll=" + (unroll ? "true" : "false") +
                                   " return_sequences=" + (return_sequences ? "true" : "false") +
                                   " go_backwards=" + (go_backwards ? "true" : "false");
          const Shape shape = return_sequences ? Shape{kBatch, kSteps, kUnits} : Shape{kBatch, kUnits};
          testing::expect_close(gru(x), expected_output(keras_gru(x, gru, go_backwards), return_sequences), shape, 1e-5,
                                what);
        }
      }
    }
  }
}

TEST(GRU, WithoutBias) {
  const Tensor x = sequences(2);
  for (const bool reset_after : {true, false}) {
    layers::GRU gru(kUnits, {.use_bias = false, .reset_after = reset_after});
    gru(x);
    randomize(gru);
    testing::expect_close(gru(x), keras_gru(x, gru, false).back(), {kBatch, kUnits}, 1e-5,
                          reset_after ? "reset after" : "reset before");
  }
}

TEST(GRU, UnrolledAndLoopedGiveTheSameValuesAndGradients) {
  const Tensor x = sequences(5);
  for (const bool reset_after : {true, false}) {
    layers::GRU looped(kUnits, {.return_sequences = true, .reset_after = reset_after});
    layers::GRU unrolled(kUnits, {.return_sequences = true, .unroll = true, .reset_after = reset_after});
    looped(x);
    unrolled(x);
    randomize(looped);
    testing::expect_same_values_and_gradients(looped, unrolled, x);
  }
}

TEST(GRU, InputAndWeightGradientsMatchFiniteDifferences) {
  for (const bool reset_after : {true, false}) {
    for (const bool unroll : {false, true}) {
      const std::string what =
          std::string(reset_after ? "reset after, " : "reset before, ") + (unroll ? "unrolled: " : "looped: ");
      layers::GRU gru(kUnits, {.return_sequences = true, .unroll = unroll, .reset_after = reset_after});
      const Tensor x = sequences(7);
      gru(x);
      randomize(gru);
      const GradcheckResult inputs = gradcheck([&](const std::vector<Tensor>& in) { return gru(in[0]); }, {x});
      EXPECT_TRUE(inputs.ok) << what << inputs.report;
      const GradcheckResult weights = testing::weight_gradcheck([&] { return gru(x); }, gru.weights());
      EXPECT_TRUE(weights.ok) << what << weights.report;
    }
  }
}

TEST(GRU, CompiledMatchesEager) {
  for (const bool reset_after : {true, false}) {
    for (const bool unroll : {false, true}) {
      SCOPED_TRACE(std::string("reset_after=") + (reset_after ? "true" : "false") +
                   " unroll=" + (unroll ? "true" : "false"));
      layers::GRU gru(kUnits, {.go_backwards = true, .unroll = unroll, .reset_after = reset_after});
      const Tensor x = sequences(9);
      gru(x);
      randomize(gru);
      testing::expect_compiled_matches_eager(gru, x);
    }
  }
}

TEST(GRU, TheLoopIsCompiledOnceWhateverTheLength) {
  layers::GRU looped(kUnits);
  layers::GRU unrolled(kUnits, {.unroll = true});
  const Tensor short_x = random::normal({kBatch, 3, kFeatures}, random::Key(1));
  const Tensor long_x = random::normal({kBatch, 12, kFeatures}, random::Key(2));
  EXPECT_EQ(testing::traced_ops(looped, short_x), testing::traced_ops(looped, long_x));
  EXPECT_GT(testing::traced_ops(unrolled, long_x), 3 * testing::traced_ops(unrolled, short_x));
}

TEST(GRU, LearnsTheSignOfASumUnderJitCompile) { EXPECT_GE(testing::sum_sign_accuracy(layers::GRU(8), 6, 31, 32), 0.9); }

TEST(GRU, BadInputsNameTheLayer) {
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { layers::GRU(-1, {.name = "rnn"}); }), "layer 'rnn' (GRU): units is -1"));
  layers::GRU gru(kUnits, {.name = "rnn"});
  EXPECT_TRUE(contains(error_message<ShapeError>([&] {
                         gru(Tensor::zeros({2, 3, 4, 5}));
                       }),
                       "layer 'rnn' (GRU): input is [2,3,4,5]; GRU takes sequences [batch, time, features]"));
  EXPECT_TRUE(contains(error_message<TypeError>([&] {
                         gru(Tensor::from_vector<std::int64_t>({1, 2}, {1, 2, 1}));
                       }),
                       "GRU needs a floating input"));
}

}  // namespace
}  // namespace kestrel
