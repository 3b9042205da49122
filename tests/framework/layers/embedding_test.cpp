#include "framework/layers/embedding.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

TEST(Embedding, LooksUpRowsForInt32AndInt64Ids) {
  clear_session();
  layers::Embedding embed(10, 4);
  Tensor ids32 = Tensor::from_vector<std::int32_t>({3, 0, 9, 3, 1, 2}, {2, 3});
  Tensor y = embed(ids32);
  EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(embed.embeddings().name(), "embedding/embeddings");
  std::vector<float> table = embed.embeddings().value().to_vector<float>();
  std::vector<float> out = y.to_vector<float>();
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(out[static_cast<std::size_t>(0 * 4 + k)], table[static_cast<std::size_t>(3 * 4 + k)]);
    EXPECT_EQ(out[static_cast<std::size_t>(2 * 4 + k)], table[static_cast<std::size_t>(9 * 4 + k)]);
  }
  Tensor ids64 = Tensor::from_vector<std::int64_t>({3, 0, 9, 3, 1, 2}, {2, 3});
  EXPECT_EQ(embed(ids64).to_vector<float>(), out);
  EXPECT_EQ(embed.count_params(), 40);
}

TEST(Embedding, DefaultInitializerIsUniformWithin0_05) {
  layers::Embedding embed(100, 50);
  std::vector<float> table = embed.embeddings().value().to_vector<float>();
  float lo = 1, hi = -1;
  for (float v : table) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -0.05f);
  EXPECT_LT(hi, 0.05f);
  EXPECT_LT(lo, -0.045f);  // the whole range is used
  EXPECT_GT(hi, 0.045f);
}

TEST(Embedding, TableExistsBeforeTheFirstCallForTying) {
  layers::Embedding embed(6, 3);
  EXPECT_FALSE(embed.built());
  const Variable& table = embed.embeddings();
  EXPECT_TRUE(embed.built());
  EXPECT_EQ(table.shape(), Shape({6, 3}));
  Tensor ids = Tensor::from_vector<std::int32_t>({1, 5}, {2});
  embed(ids);
  EXPECT_TRUE(embed.embeddings().is_same(table));
  EXPECT_EQ(embed.weights().size(), 1u);
}

TEST(Embedding, GradientsReachTheLookedUpRows) {
  layers::Embedding embed(5, 3);
  Tensor ids = Tensor::from_vector<std::int32_t>({4, 0, 4}, {3});
  GradcheckResult r = testing::weight_gradcheck([&] { return embed(ids); }, embed.weights());
  EXPECT_TRUE(r.ok) << r.report;

  GradientTape tape;
  Tensor loss = ops::sum(embed(ids));
  auto grads = tape.gradient(loss, {embed.embeddings().value()});
  std::vector<float> g = grads[0].to_vector<float>();
  EXPECT_EQ(g[0], 1.0f);      // row 0 used once
  EXPECT_EQ(g[3 * 1], 0.0f);  // row 1 unused
  EXPECT_EQ(g[3 * 4], 2.0f);  // row 4 used twice
}

TEST(Embedding, MixedBfloat16CastsTheLookedUpRowsAndSumsGradientsInFloat32) {
  testing::GlobalRandomStreamGuard guard;  // the table's initializer draws from it
  layers::Embedding embed(5, 1, {.dtype = "mixed_bfloat16"});
  const Tensor ids = Tensor::from_vector<std::int32_t>({4, 0, 4}, {3});
  const Tensor y = embed(ids);
  ASSERT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(y.to_vector<float>(),
            ops::cast(ops::gather(embed.embeddings().stored_value(), ids, 0), DType::bfloat16).to_vector<float>());

  // Row 4 is read twice, with cotangents 1 and 2^-9: their sum needs 9 significant bits, which a
  // bfloat16 table (8 bits) would round back to 1.
  GradientTape tape;
  const Tensor weights = Tensor::from_vector<float>({1.0f, 0.5f, 0.001953125f}, {3, 1});
  const Tensor loss = ops::sum(ops::multiply(ops::cast(embed(ids), DType::float32), weights));
  const std::vector<Tensor> grads = tape.gradient(loss, {embed.embeddings().stored_value()});
  ASSERT_EQ(grads[0].dtype(), DType::float32);
  const std::vector<float> g = grads[0].to_vector<float>();
  EXPECT_EQ(g[0], 0.5f);
  EXPECT_EQ(g[4], 1.001953125f);
}

TEST(Embedding, OutOfRangeIdNamesTheLayer) {
  clear_session();
  layers::Embedding embed(5, 2);
  std::string m = error_message<IndexError>([&] { embed(Tensor::from_vector<std::int32_t>({1, 5}, {2})); });
  EXPECT_TRUE(contains(m, "layer 'embedding' (Embedding)")) << m;
  EXPECT_TRUE(contains(m, "[gather]")) << m;
  EXPECT_TRUE(contains(m, "[0, 5)")) << m;
}

TEST(Embedding, FloatIdsAreRejectedWithTheFix) {
  layers::Embedding embed(5, 2);
  std::string m = error_message<TypeError>([&] { embed(Tensor::ones({2})); });
  EXPECT_TRUE(contains(m, "ops::cast")) << m;
  m = error_message<ValueError>([] { layers::Embedding(0, 4); });
  EXPECT_TRUE(contains(m, "input_dim is 0")) << m;
}

}  // namespace
}  // namespace kestrel
