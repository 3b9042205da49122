// BatchNormalization (layers/batch_normalization.h): training and inference against a reference
// computed here in double, the moving statistics, channels-first inputs, the weights, gradients,
// eager against compiled, precision policies and the errors. Replicas: tests/strategies/.
#include "framework/layers/batch_normalization.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/replicated_function.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

std::vector<double> values(const Tensor& t) { return ops::cast(t, DType::float32).to_vector<double>(); }

Tensor float32_tensor(const std::vector<double>& v) {
  return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), {static_cast<std::int64_t>(v.size())});
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0 + std::abs(want[i]))) << what << " element " << i;
  }
}

// Per-feature statistics of x along `axis` (every other axis reduced), in double.
struct Statistics {
  std::vector<double> mean, variance;
};

std::int64_t feature_of(const Shape& shape, int axis, std::int64_t flat) {
  std::int64_t inner = 1;
  for (int a = axis + 1; a < shape.rank(); ++a) inner *= shape[a];
  return (flat / inner) % shape[axis];
}

Statistics statistics_of(const Tensor& x, int axis) {
  const std::vector<double> v = values(x);
  const std::int64_t features = x.shape()[axis];
  const double count = static_cast<double>(x.numel() / features);
  Statistics s{std::vector<double>(features, 0.0), std::vector<double>(features, 0.0)};
  for (std::int64_t i = 0; i < x.numel(); ++i) s.mean[feature_of(x.shape(), axis, i)] += v[i] / count;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t f = feature_of(x.shape(), axis, i);
    s.variance[f] += (v[i] - s.mean[f]) * (v[i] - s.mean[f]) / count;
  }
  return s;
}

// (x - mean) / sqrt(variance + epsilon) * gamma + beta, per feature of `axis`.
std::vector<double> normalized(const Tensor& x, int axis, const Statistics& s, const std::vector<double>& gamma,
                               const std::vector<double>& beta, double epsilon = 1e-3) {
  const std::vector<double> v = values(x);
  std::vector<double> y(v.size());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t f = feature_of(x.shape(), axis, i);
    y[i] = (v[i] - s.mean[f]) / std::sqrt(s.variance[f] + epsilon) * gamma[f] + beta[f];
  }
  return y;
}

TEST(BatchNormalization, TrainingUsesTheBatchStatisticsAndUpdatesTheMovingOnes) {
  layers::BatchNormalization norm;
  // Column 0: mean 3, biased variance 3.5. Column 1: mean 2, variance 4.
  const Tensor x = Tensor::from_vector<float>({1, 0, 2, 0, 3, 4, 6, 4}, {4, 2});
  norm(x);  // builds (inference: the moving statistics are left alone)
  norm.gamma().assign(Tensor::from_vector<float>({2, 0.5f}, {2}));
  norm.beta().assign(Tensor::from_vector<float>({1, -1}, {2}));

  const std::vector<double> y = values(norm(x, /*training=*/true));
  EXPECT_NEAR(y[0], (1 - 3) / std::sqrt(3.5 + 1e-3) * 2 + 1, 1e-5);
  EXPECT_NEAR(y[1], (0 - 2) / std::sqrt(4 + 1e-3) * 0.5 - 1, 1e-5);
  EXPECT_NEAR(y[6], (6 - 3) / std::sqrt(3.5 + 1e-3) * 2 + 1, 1e-5);
  EXPECT_NEAR(y[7], (4 - 2) / std::sqrt(4 + 1e-3) * 0.5 - 1, 1e-5);
  // moving = moving * 0.99 + batch * 0.01, from zeros and ones.
  expect_near(values(norm.moving_mean().value()), {0.03, 0.02}, 1e-6, "moving_mean");
  expect_near(values(norm.moving_variance().value()), {0.99 + 0.035, 0.99 + 0.04}, 1e-6, "moving_variance");
}

TEST(BatchNormalization, InferenceUsesTheMovingStatistics) {
  layers::BatchNormalization norm;
  const Tensor x = random::normal({5, 3}, random::Key(1));
  norm(x);
  const Statistics moving{{0.5, -1, 2}, {4, 0.25, 1}};
  norm.moving_mean().assign(float32_tensor(moving.mean));
  norm.moving_variance().assign(float32_tensor(moving.variance));
  norm.gamma().assign(Tensor::from_vector<float>({1, 2, 3}, {3}));
  norm.beta().assign(Tensor::from_vector<float>({0, 1, -1}, {3}));
  expect_near(values(norm(x)), normalized(x, 1, moving, {1, 2, 3}, {0, 1, -1}), 1e-5, "inference");
  EXPECT_EQ(norm.moving_mean().value().to_vector<float>(), (std::vector<float>{0.5f, -1, 2}));  // unchanged
}

TEST(BatchNormalization, MovingStatisticsFollowSeveralSteps) {
  layers::BatchNormalization norm({.momentum = 0.9});
  std::vector<double> mean(4, 0.0), variance(4, 1.0);
  for (int step = 0; step < 5; ++step) {
    const Tensor x = ops::add(ops::multiply(random::normal({8, 4}, random::Key(10 + step)), Tensor::scalar(3.0)),
                              Tensor::scalar(static_cast<double>(step)));
    const Statistics batch = statistics_of(x, 1);
    const std::vector<double> y = values(norm(x, /*training=*/true));
    expect_near(y, normalized(x, 1, batch, {1, 1, 1, 1}, {0, 0, 0, 0}), 1e-5, "step " + std::to_string(step));
    for (std::size_t f = 0; f < 4; ++f) {
      mean[f] = mean[f] * 0.9 + batch.mean[f] * 0.1;
      variance[f] = variance[f] * 0.9 + batch.variance[f] * 0.1;
    }
  }
  expect_near(values(norm.moving_mean().value()), mean, 1e-5, "moving_mean");
  expect_near(values(norm.moving_variance().value()), variance, 1e-5, "moving_variance");
  // Inference now normalizes with what the steps left.
  const Tensor x = random::normal({3, 4}, random::Key(20));
  expect_near(values(norm(x)), normalized(x, 1, {mean, variance}, {1, 1, 1, 1}, {0, 0, 0, 0}), 1e-5, "inference");
}

TEST(BatchNormalization, AxisOneNormalizesTheChannelsOfChannelsFirstInputs) {
  layers::BatchNormalization nchw({.axis = 1, .momentum = 0.5});
  const Tensor x = ops::add(random::normal({2, 3, 4, 5}, random::Key(2)),
                            ops::reshape(Tensor::from_vector<float>({-5, 0, 10}, {3}), {1, 3, 1, 1}));
  const Tensor y = nchw(x, /*training=*/true);
  EXPECT_EQ(nchw.axis(), 1);
  EXPECT_EQ(nchw.gamma().shape(), (Shape{3}));
  const Statistics s = statistics_of(x, 1);
  expect_near(values(y), normalized(x, 1, s, {1, 1, 1}, {0, 0, 0}), 1e-5, "channels first");
  expect_near(values(nchw.moving_mean().value()), {s.mean[0] / 2, s.mean[1] / 2, s.mean[2] / 2}, 1e-5, "moving_mean");
  // The same as normalizing the channels-last transpose along its last axis.
  layers::BatchNormalization nhwc({.momentum = 0.5});
  const Tensor y_last = nhwc(ops::transpose(x, {0, 2, 3, 1}), /*training=*/true);
  expect_near(values(ops::transpose(y_last, {0, 3, 1, 2})), values(y), 1e-5, "against channels last");
  expect_near(values(nhwc.moving_variance().value()), values(nchw.moving_variance().value()), 1e-5, "moving_variance");
}

TEST(BatchNormalization, WeightsAreGammaBetaThenTheMovingStatistics) {
  clear_session();
  layers::BatchNormalization norm;
  norm(Tensor::ones({2, 3, 8}));
  const std::vector<Variable> w = norm.weights();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].name(), "batch_normalization/gamma");
  EXPECT_EQ(w[1].name(), "batch_normalization/beta");
  EXPECT_EQ(w[2].name(), "batch_normalization/moving_mean");
  EXPECT_EQ(w[3].name(), "batch_normalization/moving_variance");
  EXPECT_EQ(w[0].value().to_vector<float>(), std::vector<float>(8, 1.0f));
  EXPECT_EQ(w[1].value().to_vector<float>(), std::vector<float>(8, 0.0f));
  EXPECT_EQ(w[2].value().to_vector<float>(), std::vector<float>(8, 0.0f));
  EXPECT_EQ(w[3].value().to_vector<float>(), std::vector<float>(8, 1.0f));
  EXPECT_EQ(norm.trainable_weights().size(), 2u);
  ASSERT_EQ(norm.non_trainable_weights().size(), 2u);
  EXPECT_EQ(norm.non_trainable_weights()[0].name(), "batch_normalization/moving_mean");
  EXPECT_EQ(norm.count_params(), 32);
  EXPECT_EQ(norm.class_name(), "BatchNormalization");

  layers::BatchNormalization initialized(
      {.moving_mean_initializer = "ones", .moving_variance_initializer = initializers::Constant(2.0), .name = "bn"});
  initialized(Tensor::ones({2, 3}));
  EXPECT_EQ(initialized.moving_mean().name(), "bn/moving_mean");
  EXPECT_EQ(initialized.moving_mean().value().to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_EQ(initialized.moving_variance().value().to_vector<float>(), std::vector<float>(3, 2.0f));
}

TEST(BatchNormalization, CenterAndScaleCanBeTurnedOff) {
  clear_session();
  layers::BatchNormalization plain({.center = false, .scale = false});
  const Tensor x = random::normal({6, 3}, random::Key(3));
  const Tensor y = plain(x, /*training=*/true);
  const std::vector<Variable> w = plain.weights();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name(), "batch_normalization/moving_mean");
  EXPECT_EQ(w[1].name(), "batch_normalization/moving_variance");
  EXPECT_FALSE(plain.gamma().defined());
  EXPECT_FALSE(plain.beta().defined());
  expect_near(values(y), normalized(x, 1, statistics_of(x, 1), {1, 1, 1}, {0, 0, 0}), 1e-5, "plain");

  layers::BatchNormalization scale_only({.center = false});
  scale_only(x);
  scale_only.gamma().assign(Tensor::from_vector<float>({2, 3, 4}, {3}));
  ASSERT_EQ(scale_only.trainable_weights().size(), 1u);
  EXPECT_EQ(scale_only.trainable_weights()[0].name(), scale_only.gamma().name());
  expect_near(values(scale_only(x, true)), normalized(x, 1, statistics_of(x, 1), {2, 3, 4}, {0, 0, 0}), 1e-5,
              "scale only");
}

TEST(BatchNormalization, AFrozenLayerRunsInInferenceModeAsInKeras) {
  layers::BatchNormalization norm;
  const Tensor x = ops::add(random::normal({4, 2}, random::Key(4)), Tensor::scalar(5.0));
  norm(x);
  norm.set_trainable(false);
  expect_near(values(norm(x, /*training=*/true)), values(norm(x)), 0.0, "frozen");
  EXPECT_EQ(norm.moving_mean().value().to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(BatchNormalization, GradientsFlowThroughTheBatchStatistics) {
  layers::BatchNormalization norm;
  const Tensor x = ops::add(random::normal({5, 3}, random::Key(5)), Tensor::scalar(1.0));
  norm(x);
  norm.gamma().assign(random::normal({3}, random::Key(6)));
  norm.beta().assign(random::normal({3}, random::Key(7)));
  const GradcheckResult training = gradcheck([&](const std::vector<Tensor>& a) { return norm(a[0], true); }, {x});
  EXPECT_TRUE(training.ok) << training.report;
  const GradcheckResult weights = testing::weight_gradcheck([&] { return norm(x, true); }, norm.trainable_weights());
  EXPECT_TRUE(weights.ok) << weights.report;
  // Through a batch's statistics the gradient of the plain sum is zero: shifting every row alike
  // moves the mean with it.
  GradientTape tape;
  tape.watch(x);
  const std::vector<Tensor> flat = tape.gradient(ops::sum(norm(x, true)), {x});
  expect_near(values(flat[0]), std::vector<double>(15, 0.0), 1e-5, "d sum / dx");

  norm.moving_mean().assign(Tensor::from_vector<float>({1, 0, -1}, {3}));
  norm.moving_variance().assign(Tensor::from_vector<float>({2, 0.5f, 1}, {3}));
  const GradcheckResult inference = gradcheck([&](const std::vector<Tensor>& a) { return norm(a[0]); }, {x});
  EXPECT_TRUE(inference.ok) << inference.report;

  layers::BatchNormalization nchw({.axis = 1, .synchronized = true});
  const Tensor images = random::normal({2, 3, 2, 2}, random::Key(8));
  const GradcheckResult channels_first =
      gradcheck([&](const std::vector<Tensor>& a) { return nchw(a[0], true); }, {images});
  EXPECT_TRUE(channels_first.ok) << channels_first.report;
}

TEST(BatchNormalization, SynchronizedAloneIsTheBatchStatistics) {
  layers::BatchNormalization local({.momentum = 0.8});
  layers::BatchNormalization synchronized({.momentum = 0.8, .synchronized = true});
  const Tensor x = ops::add(random::normal({6, 2, 2, 3}, random::Key(9)), Tensor::scalar(2.0));
  expect_near(values(synchronized(x, true)), values(local(x, true)), 1e-5, "output");
  expect_near(values(synchronized.moving_mean().value()), values(local.moving_mean().value()), 1e-6, "moving_mean");
  expect_near(values(synchronized.moving_variance().value()), values(local.moving_variance().value()), 1e-6,
              "moving_variance");
}

// One training call compiled (jit::ReplicatedFunction, as jit_compile traces a step) against
// the same call run eagerly: output, gradients in x, gamma and beta, and the moving statistics.
void expect_compiled_training_matches_eager(const layers::BatchNormalizationOptions& options, const Tensor& x) {
  layers::BatchNormalization eager(options), compiled(options);
  eager(x);
  compiled(x);
  const Tensor cotangent = random::normal(x.shape(), random::Key(11));
  const auto step = [&](layers::BatchNormalization& norm, const Tensor& input) {
    GradientTape tape;
    tape.watch(input);
    const Tensor y = norm(input, /*training=*/true);
    std::vector<Tensor> out{y};
    for (const Tensor& g :
         tape.gradient(ops::sum(ops::multiply(y, cotangent)), {input, norm.gamma().value(), norm.beta().value()}))
      out.push_back(g);
    return out;
  };
  jit::ReplicatedFunction program(
      compiled.weights(), [&](const jit::Args& args) { return step(compiled, args.at("x")); }, "bn_step");
  for (int call = 0; call < 3; ++call) {
    const Tensor input = ops::add(x, Tensor::scalar(static_cast<double>(call)));
    const std::vector<Tensor> want = step(eager, input);
    const std::vector<Tensor> got = program({{"x", input}});
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      expect_near(values(got[i]), values(want[i]), 1e-5,
                  "call " + std::to_string(call) + " result " + std::to_string(i));
    }
  }
  EXPECT_EQ(program.compile_count(), 1);
  expect_near(values(compiled.moving_mean().value()), values(eager.moving_mean().value()), 1e-6, "moving_mean");
  expect_near(values(compiled.moving_variance().value()), values(eager.moving_variance().value()), 1e-6,
              "moving_variance");
  EXPECT_GT(std::abs(values(eager.moving_mean().value())[0]), 0.01);  // three steps moved it
}

TEST(BatchNormalization, CompiledTrainingMatchesEager) {
  expect_compiled_training_matches_eager({.momentum = 0.9}, random::normal({4, 3}, random::Key(12)));
  expect_compiled_training_matches_eager({.axis = 1, .momentum = 0.9, .synchronized = true},
                                         random::normal({2, 3, 2, 2}, random::Key(13)));
}

TEST(BatchNormalization, MixedPrecisionKeepsStatisticsAndArithmeticInFloat32) {
  layers::BatchNormalization mixed({.momentum = 0.5, .dtype = "mixed_bfloat16"});
  layers::BatchNormalization reference({.momentum = 0.5, .dtype = "float32"});
  // Around 100, bfloat16 steps by 0.5: the statistics must not be computed in it.
  const Tensor x = ops::add(random::normal({16, 4}, random::Key(14)), Tensor::scalar(100.0));
  const Tensor y = mixed(x, /*training=*/true);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  for (const Variable& w : mixed.weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  // The input is rounded to bfloat16 on the way in; from there the same float32 arithmetic.
  const Tensor rounded = ops::cast(ops::cast(x, DType::bfloat16), DType::float32);
  const Tensor want = reference(rounded, /*training=*/true);
  EXPECT_EQ(mixed.moving_mean().value().to_vector<float>(), reference.moving_mean().value().to_vector<float>());
  EXPECT_EQ(mixed.moving_variance().value().to_vector<float>(), reference.moving_variance().value().to_vector<float>());
  expect_near(values(y), values(ops::cast(ops::cast(want, DType::bfloat16), DType::float32)), 0.0, "output");
  std::vector<double> half_mean = statistics_of(rounded, 1).mean;
  for (double& m : half_mean) m *= 0.5;  // 0.5 * zeros + 0.5 * the batch's mean
  expect_near(values(mixed.moving_mean().value()), half_mean, 1e-6, "moving_mean");
  // gamma and beta are read as stored: their gradients are float32 (d sum(y) / d beta = rows).
  GradientTape tape;
  const Tensor loss = ops::sum(ops::cast(mixed(x, true), DType::float32));
  const std::vector<Tensor> grads = tape.gradient(loss, {mixed.beta().value()});
  EXPECT_EQ(grads[0].dtype(), DType::float32);
  EXPECT_EQ(grads[0].to_vector<float>(), std::vector<float>(4, 16.0f));
}

TEST(BatchNormalization, BfloatPolicyStoresBfloat16AndComputesInFloat32) {
  layers::BatchNormalization norm({.dtype = "bfloat16"});
  const Tensor x = ops::add(random::normal({8, 3}, random::Key(15)), Tensor::scalar(50.0));
  const Tensor y = norm(x, /*training=*/true);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  for (const Variable& w : norm.weights()) EXPECT_EQ(w.dtype(), DType::bfloat16) << w.name();
  const Tensor rounded = ops::cast(ops::cast(x, DType::bfloat16), DType::float32);
  expect_near(values(y), normalized(rounded, 1, statistics_of(rounded, 1), {1, 1, 1}, {0, 0, 0}), 1e-2, "output");
  // 0.99 * 0 + 0.01 * ~50, stored to bfloat16's 8 bits.
  std::vector<double> moved = statistics_of(rounded, 1).mean;
  for (double& m : moved) m *= 0.01;
  expect_near(values(norm.moving_mean().value()), moved, 1e-2, "moving_mean");
}

TEST(BatchNormalization, BadOptionsAndInputsNameTheLayer) {
  clear_session();
  layers::BatchNormalization norm;
  norm(Tensor::ones({4, 3}));
  std::string m = error_message<ShapeError>([&] { norm(Tensor::ones({4, 5})); });
  EXPECT_TRUE(contains(m, "layer 'batch_normalization' (BatchNormalization)")) << m;
  EXPECT_TRUE(contains(m, "input is [4,5]")) << m;
  EXPECT_TRUE(contains(m, "3 features on axis 1")) << m;
  m = error_message<ShapeError>([&] { norm(Tensor::ones({4, 2, 3})); });
  EXPECT_TRUE(contains(m, "rank-2 inputs")) << m;

  layers::BatchNormalization far({.axis = 2, .name = "far"});
  m = error_message<ValueError>([&] { far(Tensor::ones({4, 3})); });
  EXPECT_TRUE(contains(m, "layer 'far' (BatchNormalization): axis 2 is out of range for input [4,3] of rank 2")) << m;
  EXPECT_TRUE(contains(m, "[-2, 2)")) << m;
  layers::BatchNormalization before({.axis = -3});
  EXPECT_TRUE(contains(error_message<ValueError>([&] { before(Tensor::ones({4, 3})); }), "axis -3 is out of range"));

  for (const double momentum : {1.5, -0.1}) {
    m = error_message<ValueError>([&] { layers::BatchNormalization({.momentum = momentum, .name = "bn"}); });
    EXPECT_TRUE(contains(m, "layer 'bn' (BatchNormalization): momentum is")) << m;
    EXPECT_TRUE(contains(m, "it must be in [0, 1]")) << m;
  }
  m = error_message<ValueError>([] { layers::BatchNormalization({.epsilon = 0, .name = "bn"}); });
  EXPECT_TRUE(contains(m, "epsilon is 0")) << m;
}

}  // namespace
}  // namespace kestrel

namespace kestrel {
namespace {

// Unfreezing a layer makes trainable again only what was made trainable: the moving statistics
// stay non-trainable, as in Keras.
TEST(BatchNormalization, UnfreezingKeepsTheMovingStatisticsNonTrainable) {
  clear_session();
  layers::BatchNormalization norm;
  norm(Tensor::ones({2, 3}));
  norm.set_trainable(false);
  EXPECT_EQ(norm.trainable_weights().size(), 0U);
  norm.set_trainable(true);
  ASSERT_EQ(norm.trainable_weights().size(), 2U);
  EXPECT_EQ(norm.trainable_weights()[0].name(), "batch_normalization/gamma");
  EXPECT_EQ(norm.non_trainable_weights().size(), 2U);
}

}  // namespace
}  // namespace kestrel
