#include "framework/layers/dense.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/buffer.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"
#include "tests/support/same_bits.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(Dense, OutputShapesForRank2And3Inputs) {
  layers::Dense dense(5);
  EXPECT_EQ(dense(Tensor::ones({4, 3})).shape(), Shape({4, 5}));
  EXPECT_EQ(dense(Tensor::ones({2, 7, 3})).shape(), Shape({2, 7, 5}));
  EXPECT_EQ(dense.kernel().shape(), Shape({3, 5}));
  EXPECT_EQ(dense.bias().shape(), Shape({5}));
  EXPECT_EQ(dense.count_params(), 3 * 5 + 5);
  EXPECT_EQ(dense.class_name(), "Dense");
}

TEST(Dense, ComputesXTimesKernelPlusBias) {
  layers::Dense dense(2, {.bias_initializer = "ones"});
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  dense(x);
  dense.kernel().assign(Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}));
  EXPECT_EQ(dense(x).to_vector<float>(), (std::vector<float>{1 + 3 + 1, 2 + 3 + 1}));
}

TEST(Dense, NamesFollowKerasAfterClearSession) {
  clear_session();
  layers::Dense first(4);
  layers::Dense second(4);
  layers::Dense named(4, {.name = "head"});
  EXPECT_EQ(first.name(), "dense");
  EXPECT_EQ(second.name(), "dense_1");
  EXPECT_EQ(named.name(), "head");
  first(Tensor::ones({1, 2}));
  std::vector<Variable> w = first.weights();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name(), "dense/kernel");
  EXPECT_EQ(w[1].name(), "dense/bias");
  clear_session();
  EXPECT_EQ(layers::Dense(1).name(), "dense");
}

TEST(Dense, DefaultInitializersAreGlorotUniformAndZeros) {
  layers::Dense dense(200);
  dense(Tensor::ones({1, 100}));
  const double limit = std::sqrt(6.0 / (100 + 200));
  std::vector<float> k = dense.kernel().value().to_vector<float>();
  double sum = 0, sum_sq = 0;
  for (float v : k) {
    EXPECT_LE(std::fabs(v), limit);
    sum += v;
    sum_sq += v * v;
  }
  double n = static_cast<double>(k.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, limit * limit / 3.0, 0.003);  // variance of U(-l, l)
  for (float v : dense.bias().value().to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Dense, ActivationAndNoBias) {
  layers::Dense dense(6, {.activation = "relu", .use_bias = false});
  Tensor y = dense(random::normal({3, 4}, random::Key(1)));
  for (float v : y.to_vector<float>()) EXPECT_GE(v, 0.0f);
  EXPECT_FALSE(dense.bias().defined());
  EXPECT_EQ(dense.weights().size(), 1u);
}

// An eager call that nothing records writes its output once: the GEMM applies relu or GELU as it
// stores the biased product (ops::MatmulOptions::activation), with the ops' bits. A custom function,
// even one called "relu", runs as itself after the product.
TEST(Dense, AnEagerReluOrGeluRunsInTheGemmWithTheOpsBits) {
  const Tensor x = random::normal({4, 6, 8}, random::Key(1));
  const auto buffers_of_a_call = [&x](layers::Dense& dense) {
    const std::int64_t before = allocator_stats().allocations;
    const Tensor y = dense(x);
    return std::pair{y, allocator_stats().allocations - before};
  };
  layers::Dense linear(16);
  linear(x);  // built: the calls below allocate no weights
  const std::int64_t plain_buffers = buffers_of_a_call(linear).second;
  for (const std::string name : {"relu", "gelu"}) {
    SCOPED_TRACE(name);
    layers::Dense dense(16, {.activation = name});
    dense(x);
    const Tensor want = activations::get(name)(ops::matmul(x, dense.kernel().value(), {.bias = dense.bias().value()}));
    const auto [y, buffers] = buffers_of_a_call(dense);
    EXPECT_TRUE(testing::same_bits(y, want));
    EXPECT_EQ(buffers, plain_buffers) << "the activation wrote a buffer of its own";
  }
  layers::Dense custom(16, {.activation = ActivationFn("relu", [](const Tensor& z) { return ops::abs(z); })});
  custom(x);
  const Tensor y = buffers_of_a_call(custom).first;
  EXPECT_TRUE(
      testing::same_bits(y, ops::abs(ops::matmul(x, custom.kernel().value(), {.bias = custom.bias().value()}))));
}

TEST(Dense, GradientsWithRespectToInputsAndWeights) {
  layers::Dense dense(3, {.activation = "tanh"});
  Tensor x = random::normal({2, 4, 5}, random::Key(2));
  dense(x);
  GradcheckResult r = gradcheck([&](const std::vector<Tensor>& a) { return dense(a[0]); }, {x});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return dense(x); }, dense.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

// x . kernel = 1 + 2^-8 + 2^-12 exactly in float32, and the bias is -2^-7. Added before the one
// rounding, as the GEMM's epilogue adds it: 1 - 2^-8 + 2^-12, which rounds to 1 - 2^-8. Rounded
// first, the product would be 1 + 2^-7, and then the sum exactly 1.
TEST(Dense, Bfloat16BiasIsAddedBeforeTheProductIsRounded) {
  const testing::GlobalRandomStreamGuard stream;  // the kernel's initial draw
  layers::Dense dense(1, {.dtype = "bfloat16"});
  const Tensor x = ops::cast(Tensor::from_vector<float>({1.0f, 0x1p-8f, 0x1p-12f}, {1, 3}), DType::bfloat16);
  dense(x);
  dense.kernel().assign(ops::cast(Tensor::ones({3, 1}), DType::bfloat16));
  dense.bias().assign(ops::cast(Tensor::from_vector<float>({-0x1p-7f}, {1}), DType::bfloat16));
  const Tensor y = dense(x);
  ASSERT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(ops::cast(y, DType::float32).to_vector<float>(), std::vector<float>{1.0f - 0x1p-8f});
}

TEST(Dense, ErrorsNameTheLayerAndTheShapes) {
  clear_session();
  layers::Dense dense(4);
  std::string m = error_message<ShapeError>([&] { dense(Tensor::ones({3})); });
  EXPECT_TRUE(contains(m, "layer 'dense' (Dense)")) << m;
  EXPECT_TRUE(contains(m, "[3]")) << m;
  EXPECT_TRUE(contains(m, "expand_dims")) << m;

  dense(Tensor::ones({2, 8}));
  m = error_message<ShapeError>([&] { dense(Tensor::ones({2, 9})); });
  EXPECT_TRUE(contains(m, "layer 'dense' (Dense)")) << m;
  EXPECT_TRUE(contains(m, "[2,9]")) << m;
  EXPECT_TRUE(contains(m, "[8,4]")) << m;

  m = error_message<TypeError>([&] { dense(Tensor::ones({2, 8}, DType::int32)); });
  EXPECT_TRUE(contains(m, "ops::cast")) << m;

  m = error_message<ValueError>([] { layers::Dense(0); });
  EXPECT_TRUE(contains(m, "units is 0")) << m;
}

}  // namespace
}  // namespace kestrel
