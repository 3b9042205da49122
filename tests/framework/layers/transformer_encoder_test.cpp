#include "framework/layers/transformer_encoder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/training_step.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(TransformerEncoder, KeepsTheShapeAndCountsKerasHubParameters) {
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2});
  Tensor x = random::normal({2, 6, 8}, random::Key(0));
  EXPECT_EQ(block(x).shape(), Shape({2, 6, 8}));
  EXPECT_EQ(block.class_name(), "TransformerEncoder");
  // Attention 4 x (8x8 + 8), two layer norms 2 x 16, feed-forward 8x16+16 and 16x8+8.
  EXPECT_EQ(block.count_params(), 288 + 32 + 144 + 136);
  ASSERT_NE(block.self_attention(), nullptr);
  EXPECT_EQ(block.self_attention()->key_dim(), 4);
}

TEST(TransformerEncoder, SublayersHaveKerasHubNames) {
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2});
  block(Tensor::ones({1, 3, 8}));
  std::vector<std::string> names;
  for (const Layer* child : block.layers()) names.push_back(child->name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"self_attention_layer", "self_attention_layer_norm", "self_attention_dropout",
                                      "feedforward_layer_norm", "feedforward_intermediate_dense",
                                      "feedforward_output_dense", "feedforward_dropout"}));
  // keras_hub holds them as private attributes, which name their groups in a .weights.h5.
  EXPECT_EQ(block.child_attributes(),
            (std::vector<std::string>{"_self_attention_layer", "_self_attention_layer_norm", "_self_attention_dropout",
                                      "_feedforward_layer_norm", "_feedforward_intermediate_dense",
                                      "_feedforward_output_dense", "_feedforward_dropout"}));
  std::vector<Variable> w = block.weights();
  EXPECT_EQ(w.size(), 8u + 4u + 4u);
  // A standalone layer's weights carry its own name first, as in Keras.
  EXPECT_EQ(w[0].name(), block.name() + "/self_attention_layer/query/kernel");
  EXPECT_EQ(w[8].name(), block.name() + "/self_attention_layer_norm/gamma");
}

TEST(TransformerEncoder, PostLayerNormNormalizesEachPosition) {
  layers::TransformerEncoder block({.intermediate_dim = 32, .num_heads = 4});
  Tensor x = random::normal({2, 5, 16}, random::Key(1), 3.0, 2.0);
  Tensor y = block(x);
  Tensor mean = ops::mean(y, {.axes = {-1}});
  Tensor var = ops::mean(ops::square(y - ops::mean(y, {.axes = {-1}, .keepdims = true})), {.axes = {-1}});
  for (float m : mean.to_vector<float>()) EXPECT_NEAR(m, 0.0, 1e-4);
  for (float v : var.to_vector<float>()) EXPECT_NEAR(v, 1.0, 1e-2);
}

TEST(TransformerEncoder, PaddingMaskHidesPaddedPositions) {
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2});
  Tensor x = random::normal({1, 5, 8}, random::Key(2));
  Tensor mask = Tensor::from_vector<std::int32_t>({1, 1, 1, 0, 0}, {1, 5});
  Tensor other = ops::concat({ops::slice(x, {0, 0, 0}, {-1, 3, -1}), random::normal({1, 2, 8}, random::Key(3))}, 1);
  Tensor y = ops::slice(block(x, {.attention_mask = mask}), {0, 0, 0}, {-1, 3, -1});
  Tensor y2 = ops::slice(block(other, {.attention_mask = mask}), {0, 0, 0}, {-1, 3, -1});
  std::vector<float> a = y.to_vector<float>(), b = y2.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(TransformerEncoder, Gradients) {
  layers::TransformerEncoder block({.intermediate_dim = 6, .num_heads = 2, .activation = "gelu"});
  Tensor x = random::normal({1, 3, 4}, random::Key(4));
  Tensor mask = Tensor::from_vector<std::int32_t>({1, 1, 0}, {1, 3});
  auto f = [&](const std::vector<Tensor>& a) { return block(a[0], {.attention_mask = mask}); };
  f({x});
  GradcheckResult r = gradcheck(f, {x});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return f({x}); }, block.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

TEST(TransformerEncoder, DropoutOnlyWhileTrainingAndPreLayerNorm) {
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2, .dropout = 0.3});
  Tensor x = random::normal({1, 4, 8}, random::Key(5));
  std::vector<float> inference = block(x).to_vector<float>();
  EXPECT_EQ(block(x, {.training = false}).to_vector<float>(), inference);
  layers::TrainingStepScope step(0);
  EXPECT_NE(block(x, {.training = true}).to_vector<float>(), inference);
  // As a plain Layer (inside a Sequential) the block runs without a mask.
  Layer& as_layer = block;
  EXPECT_EQ(as_layer(x, false).to_vector<float>(), inference);

  layers::TransformerEncoder pre({.intermediate_dim = 16, .num_heads = 2, .normalize_first = true});
  EXPECT_EQ(pre(x).shape(), Shape({1, 4, 8}));
}

// Positions [begin, end) of x (axis 1) replaced by other's.
Tensor replace_tail(const Tensor& x, const Tensor& other, std::int64_t begin) {
  const std::int64_t t = x.shape()[1];
  return ops::concat({ops::slice(x, {0, 0, 0}, {-1, begin, -1}), ops::slice(other, {0, begin, 0}, {-1, t - begin, -1})},
                     1);
}

double largest_difference(const Tensor& a, const Tensor& b) { return ops::max(ops::abs(a - b)).item(); }

TEST(TransformerEncoder, CausalMaskHidesLaterPositions) {
  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 2, .normalize_first = true});
  Tensor x = random::normal({2, 6, 8}, random::Key(6));
  Tensor changed = replace_tail(x, random::normal({2, 6, 8}, random::Key(7)), 4);
  auto first_four = [](const Tensor& y) { return ops::slice(y, {0, 0, 0}, {-1, 4, -1}); };
  Tensor y = block(x, {.use_causal_mask = true});
  Tensor y2 = block(changed, {.use_causal_mask = true});
  // Positions 0..3 see only positions 0..3, which did not change.
  EXPECT_LT(largest_difference(first_four(y), first_four(y2)), 1e-6);
  // Without the mask they see the change, so the check above is not vacuous.
  EXPECT_GT(largest_difference(first_four(block(x)), first_four(block(changed))), 1e-3);

  // Combined with a padding mask: padding keys stay hidden from every position.
  Tensor padding = Tensor::from_vector<std::int32_t>({1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0}, {2, 6});
  Tensor both = block(x, {.attention_mask = padding, .use_causal_mask = true});
  EXPECT_LT(largest_difference(first_four(both), first_four(y)), 1e-6);
}

TEST(TransformerEncoder, PreLayerNormIsTheGpt2Block) {
  layers::TransformerEncoder block(
      {.intermediate_dim = 16, .num_heads = 2, .activation = "gelu", .normalize_first = true});
  Tensor x = random::normal({2, 5, 8}, random::Key(8), 1.0, 3.0);
  Tensor y = block(x, {.use_causal_mask = true});
  // x + Attention(LN1(x)), then h + FFN(LN2(h)), built from the block's own sublayers.
  auto& attention = *block.self_attention();
  auto& norm1 = dynamic_cast<layers::LayerNormalization&>(*block.layers()[1]);
  auto& norm2 = dynamic_cast<layers::LayerNormalization&>(*block.layers()[3]);
  auto& intermediate = dynamic_cast<layers::Dense&>(*block.layers()[4]);
  auto& output = dynamic_cast<layers::Dense&>(*block.layers()[5]);
  Tensor normed = norm1(x);
  Tensor h = x + attention(normed, normed, {.use_causal_mask = true});
  Tensor expected = h + output(intermediate(norm2(h)));
  EXPECT_LT(largest_difference(y, expected), 1e-5);
  // The residual stream is not normalized: the output keeps the input's scale.
  EXPECT_GT(ops::mean(ops::abs(y)).item(), 1.5);
}

TEST(TransformerEncoder, CausalGradients) {
  layers::TransformerEncoder block(
      {.intermediate_dim = 6, .num_heads = 2, .activation = "gelu", .normalize_first = true});
  Tensor x = random::normal({1, 3, 4}, random::Key(9));
  auto f = [&](const std::vector<Tensor>& a) { return block(a[0], {.use_causal_mask = true}); };
  f({x});
  GradcheckResult r = gradcheck(f, {x});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return f({x}); }, block.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

TEST(TransformerEncoder, ErrorsNameTheLayerAndTheFix) {
  clear_session();
  std::string m = error_message<ValueError>([] { layers::TransformerEncoder({.num_heads = 2}); });
  EXPECT_TRUE(contains(m, "layer 'transformer_encoder' (TransformerEncoder)")) << m;
  EXPECT_TRUE(contains(m, ".intermediate_dim")) << m;

  layers::TransformerEncoder block({.intermediate_dim = 16, .num_heads = 3});
  m = error_message<ShapeError>([&] { block(Tensor::ones({1, 4, 8})); });
  EXPECT_TRUE(contains(m, "[1,4,8]")) << m;
  EXPECT_TRUE(contains(m, "3 heads")) << m;

  layers::TransformerEncoder flat({.intermediate_dim = 16, .num_heads = 2});
  m = error_message<ShapeError>([&] { flat(Tensor::ones({4, 8})); });
  EXPECT_TRUE(contains(m, "[batch, positions, features]")) << m;
}

}  // namespace
}  // namespace kestrel
