// Precision policies (layers/dtype_policy.h): names, the global policy, what each layer stores and
// computes in, which parts stay float32, and the errors.
#include "framework/layers/dtype_policy.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/layers.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using mixed_precision::PolicyScope;
using testing::contains;
using testing::error_message;

double max_abs_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

TEST(DTypePolicy, NamesGiveTheirVariableAndComputeDtypes) {
  const DTypePolicy f32("float32"), mixed("mixed_bfloat16"), bf16("bfloat16");
  EXPECT_EQ(f32.variable_dtype(), DType::float32);
  EXPECT_EQ(f32.compute_dtype(), DType::float32);
  EXPECT_FALSE(f32.is_mixed());
  EXPECT_EQ(mixed.variable_dtype(), DType::float32);
  EXPECT_EQ(mixed.compute_dtype(), DType::bfloat16);
  EXPECT_TRUE(mixed.is_mixed());
  EXPECT_EQ(bf16.variable_dtype(), DType::bfloat16);
  EXPECT_EQ(bf16.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(DTypePolicy(DType::bfloat16), bf16);
  EXPECT_EQ(mixed.name(), "mixed_bfloat16");
}

TEST(DTypePolicy, UnknownNamesAndFloat16ListTheSupportedOnes) {
  const std::string unknown = error_message<ValueError>([] { DTypePolicy policy("mixed_bf16"); });
  EXPECT_TRUE(contains(unknown, "unknown dtype policy 'mixed_bf16'")) << unknown;
  EXPECT_TRUE(contains(unknown, "\"float32\", \"mixed_bfloat16\" or \"bfloat16\"")) << unknown;
  for (const char* name : {"mixed_float16", "float16"}) {
    const std::string m = error_message<ValueError>([&] { mixed_precision::set_global_policy(name); });
    EXPECT_TRUE(contains(m, "'" + std::string(name) + "' is not offered")) << m;
    EXPECT_TRUE(contains(m, "loss scaling")) << m;
    EXPECT_TRUE(contains(m, "use \"mixed_bfloat16\"")) << m;
  }
  EXPECT_EQ(mixed_precision::global_policy().name(), "float32");  // a failed set changes nothing
  const std::string int_policy = error_message<ValueError>([] { DTypePolicy policy(DType::int32); });
  EXPECT_TRUE(contains(int_policy, "not int32")) << int_policy;
}

TEST(DTypePolicy, GlobalPolicyAppliesToLayersMadeAfterIt) {
  EXPECT_EQ(mixed_precision::global_policy().name(), "float32");
  layers::Dense before(2);
  {
    PolicyScope mixed("mixed_bfloat16");
    layers::Dense during(2);
    EXPECT_EQ(during.dtype_policy().name(), "mixed_bfloat16");
    EXPECT_EQ(before.dtype_policy().name(), "float32");
  }
  EXPECT_EQ(mixed_precision::global_policy().name(), "float32");
}

TEST(DTypePolicy, MixedDenseKeepsFloat32WeightsAndComputesInBfloat16) {
  layers::Dense dense(3, {.dtype = "mixed_bfloat16"});
  const Tensor x = random::normal({4, 5}, random::Key(1));
  const Tensor y = dense(x);
  EXPECT_EQ(dense.kernel().dtype(), DType::float32);
  EXPECT_EQ(dense.bias().dtype(), DType::float32);
  EXPECT_EQ(dense.variable_dtype(), DType::float32);
  EXPECT_EQ(dense.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  // The same math in float32 on the rounded operands, within bfloat16's rounding of the result.
  const Tensor want =
      ops::add(ops::matmul(ops::cast(ops::cast(x, DType::bfloat16), DType::float32),
                           ops::cast(ops::cast(dense.kernel().value(), DType::bfloat16), DType::float32)),
               dense.bias().value());
  EXPECT_LT(max_abs_difference(ops::cast(y, DType::float32), want), 0.05);
}

TEST(DTypePolicy, MixedGradientsReachTheFloat32Variables) {
  layers::Dense dense(3, {.dtype = "mixed_bfloat16"});
  const Tensor x = random::normal({4, 5}, random::Key(2));
  dense(x);
  GradientTape tape;
  const Tensor loss = ops::sum(ops::cast(dense(x), DType::float32));
  auto grads = tape.gradient(loss, {dense.kernel().value(), dense.bias().value()});
  EXPECT_EQ(grads[0].dtype(), DType::float32);
  EXPECT_EQ(grads[1].dtype(), DType::float32);
  // d sum(x k + b) / d b is the batch size in every column.
  EXPECT_EQ(grads[1].to_vector<float>(), (std::vector<float>{4, 4, 4}));
}

TEST(DTypePolicy, BfloatPolicyStoresTheVariablesInBfloat16) {
  layers::Dense dense(3, {.dtype = "bfloat16"});
  const Tensor y = dense(random::normal({2, 4}, random::Key(3)));
  EXPECT_EQ(dense.kernel().dtype(), DType::bfloat16);
  EXPECT_EQ(dense.bias().dtype(), DType::bfloat16);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
}

TEST(DTypePolicy, Float32LayerInsideAMixedModelComputesInFloat32) {
  PolicyScope mixed("mixed_bfloat16");
  Sequential model{layers::Dense(8, {.activation = "relu"}), layers::Dense(2, {.dtype = "float32"})};
  const Tensor y = model(random::normal({3, 4}, random::Key(4)));
  const auto& hidden = dynamic_cast<const layers::Dense&>(*model.layers()[0]);
  const auto& head = dynamic_cast<const layers::Dense&>(*model.layers()[1]);
  EXPECT_EQ(hidden.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(head.compute_dtype(), DType::float32);
  EXPECT_EQ(y.dtype(), DType::float32);
}

TEST(DTypePolicy, MixedModelOutputsComeBackAsFloat32AndBfloat16ModelsKeepBfloat16) {
  for (const char* name : {"mixed_bfloat16", "bfloat16"}) {
    PolicyScope policy(name);
    Sequential model{layers::Dense(4, {.activation = "relu"}), layers::Dense(2)};
    const Tensor y = model(random::normal({3, 5}, random::Key(5)));
    EXPECT_EQ(y.dtype(), DTypePolicy(name).is_mixed() ? DType::float32 : DType::bfloat16) << name;
    EXPECT_EQ(model.weights()[0].dtype(), DTypePolicy(name).variable_dtype()) << name;
  }
}

TEST(DTypePolicy, LayerNormalizationKeepsItsStatisticsGainAndOffsetInFloat32) {
  layers::LayerNormalization norm({.dtype = "mixed_bfloat16"});
  layers::LayerNormalization reference({.dtype = "float32"});
  const Tensor x = ops::add(random::normal({6, 16}, random::Key(6)), Tensor::scalar(100.0));
  const Tensor y = norm(x);
  reference(x);
  EXPECT_EQ(norm.weights()[0].dtype(), DType::float32);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  // The input is rounded to bfloat16 (a step of 0.5 near 100), then normalized in float32.
  const Tensor want = reference(ops::cast(ops::cast(x, DType::bfloat16), DType::float32));
  EXPECT_LT(max_abs_difference(ops::cast(y, DType::float32), want), 0.02);
  // Its gain is read as stored: not cast, so its gradient is exact float32.
  GradientTape tape;
  const Tensor loss = ops::sum(ops::cast(norm(x), DType::float32));
  auto grads = tape.gradient(loss, {norm.weights()[1].value()});  // beta: d/dbeta sum = rows
  EXPECT_EQ(grads[0].dtype(), DType::float32);
  EXPECT_EQ(grads[0].to_vector<float>(), std::vector<float>(16, 6.0f));
}

TEST(DTypePolicy, ChildLayersTakeTheirParentsPolicy) {
  layers::MultiHeadAttention attention(2, 4, {.dtype = "mixed_bfloat16"});
  const Tensor x = random::normal({2, 3, 8}, random::Key(7));
  const Tensor y = attention(x, x);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  for (const Layer* child : attention.layers())
    EXPECT_EQ(child->dtype_policy().name(), "mixed_bfloat16") << child->name();
  for (const Variable& w : attention.weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  // A child given its own policy keeps it.
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2, .dtype = "bfloat16"});
  block(x);
  for (const Variable& w : block.weights()) EXPECT_EQ(w.dtype(), DType::bfloat16) << w.name();
}

TEST(DTypePolicy, IntegerInputsAreNotCast) {
  layers::Embedding embedding(10, 4, {.dtype = "mixed_bfloat16"});
  const Tensor ids = Tensor::from_vector<std::int32_t>({1, 2, 3}, {3});
  const Tensor y = embedding(ids);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(embedding.embeddings().dtype(), DType::float32);
}

TEST(DTypePolicy, AutocastScopeCastsReadsOnlyWhileAlive) {
  Variable v("v", Tensor::ones({2}));
  Variable frozen("frozen", Tensor::ones({2}), /*trainable=*/true, /*autocast=*/false);
  Variable count("count", Tensor::scalar(3, DType::int64), /*trainable=*/false);
  {
    AutocastScope scope(DType::bfloat16);
    EXPECT_EQ(v.value().dtype(), DType::bfloat16);
    EXPECT_EQ(v.dtype(), DType::float32);
    EXPECT_EQ(frozen.value().dtype(), DType::float32);
    EXPECT_EQ(count.value().dtype(), DType::int64);
  }
  EXPECT_EQ(v.value().dtype(), DType::float32);
}

}  // namespace
}  // namespace kestrel
