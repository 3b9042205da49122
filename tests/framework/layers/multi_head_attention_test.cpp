#include "framework/layers/multi_head_attention.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/dtype_policy.h"
#include "framework/layers/training_step.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// An outer layer, so weight names carry the attention layer's name as they do inside a model.
class Holder : public Layer {
 public:
  Holder() : Layer("Holder"), mha(add<layers::MultiHeadAttention>(2, 4)) {}
  layers::MultiHeadAttention& mha;
};

// Rows [begin, end) of positions (axis 1) of x replaced by other's.
Tensor replace_positions(const Tensor& x, const Tensor& other, std::int64_t begin) {
  std::int64_t t = x.shape()[1];
  Tensor head = ops::slice(x, {0, 0, 0}, {-1, begin, -1});
  Tensor tail = ops::slice(other, {0, begin, 0}, {-1, t - begin, -1});
  return ops::concat({head, tail}, 1);
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}

TEST(MultiHeadAttention, OutputShapes) {
  layers::MultiHeadAttention mha(2, 4);
  Tensor x = random::normal({2, 5, 8}, random::Key(0));
  EXPECT_EQ(mha(x, x).shape(), Shape({2, 5, 8}));
  EXPECT_EQ(mha.class_name(), "MultiHeadAttention");

  layers::MultiHeadAttention cross(3, 4, {.value_dim = 6, .output_shape = 12});
  Tensor q = random::normal({2, 3, 8}, random::Key(1));
  Tensor v = random::normal({2, 7, 10}, random::Key(2));
  Tensor k = random::normal({2, 7, 5}, random::Key(3));
  EXPECT_EQ(cross(q, v, {.key = k}).shape(), Shape({2, 3, 12}));
  EXPECT_EQ(cross.key_dense().kernel().shape(), Shape({5, 3, 4}));
  EXPECT_EQ(cross.value_dense().kernel().shape(), Shape({10, 3, 6}));
  EXPECT_EQ(cross.output_dense().kernel().shape(), Shape({3, 6, 12}));
}

TEST(MultiHeadAttention, SublayersAndWeightsFollowKeras) {
  clear_session();
  layers::MultiHeadAttention mha(2, 4);
  Tensor x = Tensor::ones({1, 3, 8});
  mha(x, x);
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  for (const Variable& v : mha.weights()) {
    names.push_back(v.name());
    shapes.push_back(v.shape());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"multi_head_attention/query/kernel", "multi_head_attention/query/bias",
                                             "multi_head_attention/key/kernel", "multi_head_attention/key/bias",
                                             "multi_head_attention/value/kernel", "multi_head_attention/value/bias",
                                             "multi_head_attention/attention_output/kernel",
                                             "multi_head_attention/attention_output/bias"}));
  EXPECT_EQ(shapes, (std::vector<Shape>{{8, 2, 4}, {2, 4}, {8, 2, 4}, {2, 4}, {8, 2, 4}, {2, 4}, {2, 4, 8}, {8}}));
  EXPECT_EQ(mha.count_params(), 3 * (8 * 8 + 8) + (8 * 8 + 8));
  // Keras holds the sublayers under these attributes, which name their groups in a .weights.h5.
  EXPECT_EQ(mha.child_attributes(),
            (std::vector<std::string>{"query_dense", "key_dense", "value_dense", "_dropout_layer", "output_dense"}));
  EXPECT_EQ(mha.layers()[0], &mha.query_dense());
  EXPECT_EQ(mha.layers()[4], &mha.output_dense());
}

TEST(MultiHeadAttention, WeightNamesFollowTheEnclosingLayer) {
  clear_session();
  Holder holder;
  Tensor x = Tensor::ones({1, 3, 8});
  holder.mha(x, x);
  EXPECT_EQ(holder.weights().front().name(), "holder/multi_head_attention/query/kernel");
}

TEST(MultiHeadAttention, MatchesAReferenceComputation) {
  layers::MultiHeadAttention mha(2, 3, {.use_bias = false});
  Tensor x = random::normal({1, 4, 6}, random::Key(4));
  std::vector<float> got = mha(x, x).to_vector<float>();
  // Per head h: softmax(q_h k_h^T / sqrt(3)) v_h, then the heads' outputs summed through the output kernel.
  Tensor wq = mha.query_dense().kernel().value(), wk = mha.key_dense().kernel().value();
  Tensor wv = mha.value_dense().kernel().value(), wo = mha.output_dense().kernel().value();
  Tensor out = Tensor::zeros({1, 4, 6});
  for (std::int64_t h = 0; h < 2; ++h) {
    auto head = [&](const Tensor& w) { return ops::reshape(ops::slice(w, {0, h, 0}, {-1, 1, -1}), {6, 3}); };
    Tensor q = ops::matmul(x, head(wq)), k = ops::matmul(x, head(wk)), v = ops::matmul(x, head(wv));
    Tensor p = ops::softmax(ops::matmul(q, k, {.transpose_b = true}) / std::sqrt(3.0));
    Tensor o = ops::reshape(ops::slice(wo, {h, 0, 0}, {1, -1, -1}), {3, 6});
    out = out + ops::matmul(ops::matmul(p, v), o);
  }
  expect_near(got, out.to_vector<float>(), 1e-5);
}

TEST(MultiHeadAttention, CausalMaskBlocksFuturePositions) {
  layers::MultiHeadAttention mha(2, 4);
  Tensor x = random::normal({2, 6, 8}, random::Key(5));
  Tensor changed = replace_positions(x, random::normal({2, 6, 8}, random::Key(6)), 3);
  Tensor y = mha(x, x, {.use_causal_mask = true});
  Tensor y2 = mha(changed, changed, {.use_causal_mask = true});
  // Positions 0..2 see only positions 0..2, which did not change.
  expect_near(ops::slice(y, {0, 0, 0}, {-1, 3, -1}).to_vector<float>(),
              ops::slice(y2, {0, 0, 0}, {-1, 3, -1}).to_vector<float>(), 1e-6);
  EXPECT_GT(
      std::fabs(
          ops::sum(ops::abs(ops::slice(y, {0, 3, 0}, {-1, -1, -1}) - ops::slice(y2, {0, 3, 0}, {-1, -1, -1}))).item()),
      1e-3);
  // Without the mask, early positions see the change.
  Tensor free = mha(x, x), free2 = mha(changed, changed);
  EXPECT_GT(
      ops::sum(ops::abs(ops::slice(free, {0, 0, 0}, {-1, 1, -1}) - ops::slice(free2, {0, 0, 0}, {-1, 1, -1}))).item(),
      1e-3);
}

TEST(MultiHeadAttention, AttentionMaskBlocksMaskedKeys) {
  layers::MultiHeadAttention mha(2, 4);
  Tensor q = random::normal({2, 3, 8}, random::Key(7));
  Tensor v = random::normal({2, 5, 8}, random::Key(8));
  // Keys 3 and 4 are padding in both rows.
  Tensor padding = Tensor::from_vector<std::int32_t>({1, 1, 1, 0, 0, 1, 1, 1, 0, 0}, {2, 5});
  Tensor v2 = replace_positions(v, random::normal({2, 5, 8}, random::Key(9)), 3);
  std::vector<float> y = mha(q, v, {.attention_mask = padding}).to_vector<float>();
  expect_near(y, mha(q, v2, {.attention_mask = padding}).to_vector<float>(), 1e-6);

  // The same mask as bool, float and [B,T,S] gives the same result.
  expect_near(y, mha(q, v, {.attention_mask = ops::cast(padding, DType::bool_)}).to_vector<float>(), 1e-6);
  expect_near(y, mha(q, v, {.attention_mask = ops::cast(padding, DType::float32)}).to_vector<float>(), 1e-6);
  Tensor full = ops::broadcast_to(ops::reshape(padding, {2, 1, 5}), {2, 3, 5});
  expect_near(y, mha(q, v, {.attention_mask = full}).to_vector<float>(), 1e-6);
  // And it differs from no mask at all.
  EXPECT_GT(ops::sum(ops::abs(mha(q, v) - mha(q, v, {.attention_mask = padding}))).item(), 1e-3);
}

TEST(MultiHeadAttention, Gradients) {
  layers::MultiHeadAttention mha(2, 3);
  Tensor q = random::normal({1, 3, 4}, random::Key(10));
  Tensor v = random::normal({1, 4, 4}, random::Key(11));
  Tensor mask = Tensor::from_vector<std::int32_t>({1, 1, 1, 0}, {1, 4});
  auto f = [&](const std::vector<Tensor>& a) {
    return mha(a[0], a[1], {.attention_mask = mask, .use_causal_mask = true});
  };
  f({q, v});
  GradcheckResult r = gradcheck(f, {q, v});
  EXPECT_TRUE(r.ok) << r.report;
  GradcheckResult w = testing::weight_gradcheck([&] { return f({q, v}); }, mha.weights());
  EXPECT_TRUE(w.ok) << w.report;
}

TEST(MultiHeadAttention, DropoutOnlyWhileTraining) {
  layers::MultiHeadAttention mha(2, 4, {.dropout = 0.5});
  Tensor x = random::normal({1, 6, 8}, random::Key(12));
  std::vector<float> inference = mha(x, x).to_vector<float>();
  EXPECT_EQ(mha(x, x, {.training = false}).to_vector<float>(), inference);
  layers::TrainingStepScope step(0);
  EXPECT_NE(mha(x, x, {.training = true}).to_vector<float>(), inference);
}

// The projections add a bfloat16 bias before the product's one rounding, as Dense does (the
// values are dense_test.cpp's): [1, 3] -> [1, 1, 1] heads of one dim.
TEST(MultiHeadAttention, Bfloat16ProjectionBiasIsAddedBeforeTheProductIsRounded) {
  const testing::GlobalRandomStreamGuard stream;
  mixed_precision::PolicyScope policy("bfloat16");
  layers::detail::AttentionProjection narrow("query", 1, {1, 1}, true, "ones", "zeros");
  const Tensor x = ops::cast(Tensor::from_vector<float>({1.0f, 0x1p-8f, 0x1p-12f}, {1, 3}), DType::bfloat16);
  narrow(x);
  narrow.bias().assign(ops::cast(Tensor::from_vector<float>({-0x1p-7f}, {1, 1}), DType::bfloat16));
  const Tensor y = narrow(x);
  ASSERT_EQ(y.shape(), Shape({1, 1, 1}));
  EXPECT_EQ(ops::cast(y, DType::float32).to_vector<float>(), std::vector<float>{1.0f - 0x1p-8f});
}

TEST(MultiHeadAttention, ErrorsNameTheLayerAndTheShapes) {
  clear_session();
  layers::MultiHeadAttention mha(2, 4);
  Tensor x = Tensor::ones({2, 5, 8});
  std::string m = error_message<ShapeError>([&] { mha(Tensor::ones({5, 8}), Tensor::ones({5, 8})); });
  EXPECT_TRUE(contains(m, "layer 'multi_head_attention' (MultiHeadAttention)")) << m;
  EXPECT_TRUE(contains(m, "[5,8]")) << m;

  m = error_message<ShapeError>([&] { mha(x, x, {.attention_mask = Tensor::ones({2, 4})}); });
  EXPECT_TRUE(contains(m, "attention_mask is [2,4]")) << m;
  EXPECT_TRUE(contains(m, "[2,5]")) << m;

  m = error_message<ShapeError>([&] { mha(x, Tensor::ones({3, 5, 8})); });
  EXPECT_TRUE(contains(m, "[3,5,8]")) << m;

  EXPECT_THROW(layers::MultiHeadAttention(0, 4), ValueError);
  EXPECT_THROW(layers::MultiHeadAttention(2, 4, {.dropout = 1.0}), ValueError);
}

}  // namespace
}  // namespace kestrel
