// Error messages and numerical behavior of the neural-network ops that the op table does not
// cover: bad inputs, dropout's statistics and determinism, and softmax on extreme logits.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

Tensor logits_4x5() { return random::uniform({4, 5}, random::Key(3), -1, 1); }

TEST(SparseSoftmaxCrossEntropyErrors, LabelsShapeMustBeLogitsWithoutClassAxis) {
  std::string m = error_message<ShapeError>([] {
    ops::sparse_softmax_cross_entropy(logits_4x5(), Tensor::from_vector<std::int64_t>({0, 1, 2}, {3}));
  });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy]")) << m;
  EXPECT_TRUE(contains(m, "logits are [4,5] and labels are [3]")) << m;
  EXPECT_TRUE(contains(m, "labels must be [4]")) << m;
}

TEST(SparseSoftmaxCrossEntropyErrors, FloatLabelsAreATypeError) {
  std::string m = error_message<TypeError>(
      [] { ops::sparse_softmax_cross_entropy(logits_4x5(), Tensor::zeros({4}, DType::float32)); });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy] labels are float32[4]")) << m;
  EXPECT_TRUE(contains(m, "int32 or int64")) << m;
}

TEST(SparseSoftmaxCrossEntropyErrors, LabelOutOfRangeNamesRowAndValue) {
  std::string m = error_message<IndexError>([] {
    ops::sparse_softmax_cross_entropy(logits_4x5(), Tensor::from_vector<std::int64_t>({1, 7, 0, 9}, {4}));
  });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy] labels[1] is 7")) << m;
  EXPECT_TRUE(contains(m, "outside [0, 5)")) << m;
  EXPECT_TRUE(contains(m, "ignore_index (-100)")) << m;
}

TEST(SparseSoftmaxCrossEntropyErrors, NegativeLabelOtherThanIgnoreIndexNamesMultiIndex) {
  Tensor logits = random::uniform({2, 2, 3}, random::Key(4));
  std::string m = error_message<IndexError>([&] {
    ops::sparse_softmax_cross_entropy(logits, Tensor::from_vector<std::int32_t>({0, -100, -1, 2}, {2, 2}));
  });
  EXPECT_TRUE(contains(m, "labels[1,0] is -1")) << m;
}

TEST(SparseSoftmaxCrossEntropy, IgnoredRowsHaveZeroLossAndGradient) {
  Tensor labels = Tensor::from_vector<std::int64_t>({2, -100, 0, -100}, {4});
  auto f = [&](const std::vector<Tensor>& a) { return ops::sum(ops::sparse_softmax_cross_entropy(a[0], labels)); };
  auto [loss, grads] = value_and_grad(f, {logits_4x5()});
  std::vector<float> per_row = ops::sparse_softmax_cross_entropy(logits_4x5(), labels).to_vector<float>();
  EXPECT_EQ(per_row[1], 0.0f);
  EXPECT_EQ(per_row[3], 0.0f);
  EXPECT_GT(per_row[0], 0.0f);
  std::vector<float> g = grads[0].to_vector<float>();
  for (int c = 0; c < 5; ++c) {
    EXPECT_EQ(g[5 + c], 0.0f) << "row 1, class " << c;
    EXPECT_EQ(g[15 + c], 0.0f) << "row 3, class " << c;
  }
  // A kept row's gradient is softmax - one_hot, which sums to zero.
  double row0 = 0;
  for (int c = 0; c < 5; ++c) row0 += g[c];
  EXPECT_NEAR(row0, 0.0, 1e-6);
}

TEST(SparseSoftmaxCrossEntropy, LargeLogitsGiveFiniteLoss) {
  Tensor logits = Tensor::from_vector<float>({1000, 0, -1000, 999}, {1, 4});
  std::vector<float> loss =
      ops::sparse_softmax_cross_entropy(logits, Tensor::from_vector<std::int64_t>({3}, {1})).to_vector<float>();
  EXPECT_NEAR(loss[0], 1.0 + std::log1p(std::exp(-1.0)), 1e-5);
}

TEST(SoftmaxErrors, IntegerInputIsATypeError) {
  std::string m = error_message<TypeError>([] { ops::softmax(Tensor::zeros({2, 3}, DType::int32)); });
  EXPECT_TRUE(contains(m, "[softmax] x is int32[2,3]")) << m;
}

TEST(SoftmaxErrors, AxisOutOfRangeIsAShapeError) {
  std::string m = error_message<ShapeError>([] { ops::log_softmax(Tensor::zeros({2, 3}), 2); });
  EXPECT_TRUE(contains(m, "[log_softmax] axis 2 is out of range")) << m;
}

TEST(Softmax, LargeLogitsAreFinite) {
  Tensor x = Tensor::from_vector<float>({1000, 0, -1000, 999, -1000, -1000}, {2, 3});
  for (int axis : {-1, 0}) {
    std::vector<float> p = ops::softmax(x, axis).to_vector<float>();
    std::vector<float> lp = ops::log_softmax(x, axis).to_vector<float>();
    for (std::size_t i = 0; i < p.size(); ++i) {
      EXPECT_TRUE(std::isfinite(p[i])) << "axis " << axis << " element " << i;
      EXPECT_TRUE(std::isfinite(lp[i])) << "axis " << axis << " element " << i;
    }
  }
  std::vector<float> p = ops::softmax(x).to_vector<float>();
  EXPECT_NEAR(p[0], 1.0f, 1e-6);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_NEAR(p[3] + p[4] + p[5], 1.0f, 1e-6);
}

TEST(Softmax, Bfloat16MatchesFloat32RoundedToBfloat16) {
  Tensor x = random::uniform({3, 7}, random::Key(10), -4, 4);
  Tensor x16 = ops::cast(x, DType::bfloat16);
  Tensor got = ops::softmax(x16);
  EXPECT_EQ(got.dtype(), DType::bfloat16);
  std::vector<float> want = ops::softmax(ops::cast(x16, DType::float32)).to_vector<float>();
  std::vector<float> g = got.to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], static_cast<float>(bfloat16(want[i]))) << i;
}

TEST(Softmax, LongRowsAndWideColumnsSumToOne) {
  // Large enough to split over threads and over several column blocks.
  Tensor x = random::uniform({3, 700, 300}, random::Key(5), -5, 5);
  for (int axis : {2, 1, 0}) {
    Tensor total = ops::sum(ops::softmax(x, axis), {.axes = {axis}});
    for (float t : total.to_vector<float>()) ASSERT_NEAR(t, 1.0f, 1e-4) << "axis " << axis;
  }
}

TEST(LayerNormErrors, GammaOfWrongSize) {
  std::string m = error_message<ShapeError>([] {
    ops::layer_norm(Tensor::zeros({2, 4}), Tensor::ones({5}), Tensor::zeros({4}));
  });
  EXPECT_TRUE(contains(m, "[layer_norm] x is [2,4] and gamma is [5]")) << m;
  EXPECT_TRUE(contains(m, "must be [4]")) << m;
}

TEST(LayerNormErrors, NegativeEpsilon) {
  std::string m = error_message<ValueError>([] {
    ops::layer_norm(Tensor::zeros({2, 4}), Tensor::ones({4}), Tensor::zeros({4}), {.epsilon = -1});
  });
  EXPECT_TRUE(contains(m, "[layer_norm] epsilon is -1")) << m;
}

TEST(LayerNorm, LargeMeanIsNormalizedAccurately) {
  // Rows around 1e4 with spread ~1: E[x^2] - E[x]^2 in float32 would lose the variance entirely.
  Tensor x = random::uniform({4, 64}, random::Key(6), 9999, 10001);
  std::vector<float> y = ops::layer_norm(x, Tensor::ones({64}), Tensor::zeros({64}), {.epsilon = 0}).to_vector<float>();
  std::vector<double> v = x.to_vector<double>();
  for (int row = 0; row < 4; ++row) {
    double mean = 0, var = 0;
    for (int i = 0; i < 64; ++i) mean += v[row * 64 + i] / 64;
    for (int i = 0; i < 64; ++i) var += (v[row * 64 + i] - mean) * (v[row * 64 + i] - mean) / 64;
    for (int i = 0; i < 64; ++i) {
      ASSERT_NEAR(y[row * 64 + i], (v[row * 64 + i] - mean) / std::sqrt(var), 2e-3) << "row " << row << " i " << i;
    }
  }
}

TEST(LayerNorm, Bfloat16InputWithFloat32ParametersKeepsEachDtype) {
  // Mixed precision: bf16 activations, float32 weights; each gradient takes its input's dtype.
  Tensor x = ops::cast(random::uniform({2, 8}, random::Key(7), -2, 2), DType::bfloat16);
  Tensor gamma = random::uniform({8}, random::Key(8), 0.5, 1.5);
  Tensor beta = random::uniform({8}, random::Key(9), -0.5, 0.5);
  auto f = [](const std::vector<Tensor>& a) { return ops::sum(ops::layer_norm(a[0], a[1], a[2])); };
  auto [y, grads] = value_and_grad(f, {x, gamma, beta});
  EXPECT_EQ(ops::layer_norm(x, gamma, beta).dtype(), DType::bfloat16);
  EXPECT_EQ(grads[0].dtype(), DType::bfloat16);
  EXPECT_EQ(grads[1].dtype(), DType::float32);
  EXPECT_EQ(grads[2].dtype(), DType::float32);
  for (float b : grads[2].to_vector<float>()) EXPECT_EQ(b, 2.0f);  // d sum / d beta counts the rows
}

TEST(DropoutErrors, RateOutsideZeroToOne) {
  Tensor key = random::key_tensor(random::Key(1));
  for (double rate : {1.5, 1.0, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    std::string m = error_message<ValueError>([&] { ops::dropout(Tensor::ones({4}), rate, key); });
    EXPECT_TRUE(contains(m, "[dropout] rate is ")) << m;
    EXPECT_TRUE(contains(m, "it must be in [0, 1)")) << m;
  }
  std::string m = error_message<ValueError>([&] { ops::dropout(Tensor::ones({4}), 1.5, key); });
  EXPECT_TRUE(contains(m, "rate is 1.5")) << m;
}

TEST(DropoutErrors, KeyMustBeAnInt64Scalar) {
  std::string m = error_message<TypeError>([] { ops::dropout(Tensor::ones({4}), 0.5, Tensor::scalar(7)); });
  EXPECT_TRUE(contains(m, "[dropout] key is float32[]")) << m;
  EXPECT_TRUE(contains(m, "random::key_tensor")) << m;
  m = error_message<ShapeError>([] {
    ops::dropout(Tensor::ones({4}), 0.5, Tensor::from_vector<std::int64_t>({1, 2}, {2}));
  });
  EXPECT_TRUE(contains(m, "[dropout] key is int64[2]")) << m;
}

TEST(Dropout, KeepsOneMinusRateAndIsAPureFunctionOfTheKey) {
  const double rate = 0.3;
  Tensor x = Tensor::ones({20000});
  std::vector<float> a = ops::dropout(x, rate, random::key_tensor(random::Key(11))).to_vector<float>();
  std::vector<float> again = ops::dropout(x, rate, random::key_tensor(random::Key(11))).to_vector<float>();
  std::vector<float> other = ops::dropout(x, rate, random::key_tensor(random::Key(12))).to_vector<float>();
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  int kept = 0, differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i] == 0.0f || a[i] == scale) << "element " << i << " is " << a[i];
    kept += a[i] != 0.0f;
    differ += a[i] != other[i];
  }
  EXPECT_EQ(a, again);
  EXPECT_NEAR(kept / 20000.0, 1.0 - rate, 0.015);
  // Two independent masks differ where exactly one keeps: 2 * 0.7 * 0.3 = 42% of elements.
  EXPECT_GT(differ, 6000);
}

TEST(Dropout, RateZeroIsIdentity) {
  Tensor x = random::normal({3, 4}, random::Key(2));
  EXPECT_EQ(ops::dropout(x, 0.0, random::key_tensor(random::Key(9))).to_vector<float>(), x.to_vector<float>());
}

TEST(Dropout, GradientUsesTheForwardMask) {
  Tensor key = random::key_tensor(random::Key(21));
  Tensor x = random::normal({64}, random::Key(3));
  std::vector<Tensor> g =
      grad([&](const std::vector<Tensor>& a) { return ops::sum(ops::dropout(a[0], 0.25, key)); }, {x});
  std::vector<float> mask = ops::dropout(Tensor::ones({64}), 0.25, key).to_vector<float>();
  EXPECT_EQ(g[0].to_vector<float>(), mask);
}

TEST(RandomKeyTensor, RoundTripsEvery64BitKey) {
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{42}, ~std::uint64_t{0}, std::uint64_t{1} << 63}) {
    random::Key key = random::Key(seed).fold_in(5);
    Tensor t = random::key_tensor(key);
    EXPECT_EQ(t.dtype(), DType::int64);
    EXPECT_EQ(t.rank(), 0);
    EXPECT_EQ(random::key_from_tensor(t), key) << seed;
  }
  std::string m = error_message<TypeError>([] { random::key_from_tensor(Tensor::scalar(1)); });
  EXPECT_TRUE(contains(m, "[random.key_from_tensor] key is float32[]")) << m;
}

}  // namespace
}  // namespace kestrel
