#include "models/position_embedding.h"

#include <gtest/gtest.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/models/bert_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::max_abs_diff;

TEST(PositionEmbedding, GivesTheFirstRowsOfItsTable) {
  clear_session();
  models::PositionEmbedding positions(10);
  Tensor x = random::normal({3, 4, 6}, random::Key(0));
  Tensor y = positions(x);
  EXPECT_EQ(y.shape(), Shape({1, 4, 6}));
  EXPECT_EQ(positions.embeddings().shape(), Shape({10, 6}));
  EXPECT_EQ(positions.embeddings().name(), "position_embedding/embeddings");
  Tensor rows = ops::reshape(ops::slice(positions.embeddings().value(), {0, 0}, {4, 6}), {1, 4, 6});
  EXPECT_EQ(max_abs_diff(y, rows), 0.0);
}

TEST(PositionEmbedding, OnlyUsedRowsGetGradient) {
  models::PositionEmbedding positions(5);
  Tensor x = Tensor::zeros({2, 3, 4});
  positions(x);
  GradientTape tape;
  Tensor loss = ops::sum(ops::add(x, positions(x)));
  auto grads = tape.gradient(loss, {positions.embeddings().value()});
  std::vector<float> g = grads[0].to_vector<float>();
  // Broadcast over a batch of 2: rows 0..2 get 2 per entry, rows 3..4 nothing.
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], i < 3 * 4 ? 2.0f : 0.0f) << i;
}

TEST(PositionEmbedding, ErrorsNameTheLayerAndTheFix) {
  models::PositionEmbedding positions(4, {.name = "positions"});
  positions(Tensor::zeros({1, 2, 8}));
  std::string m = error_message<ShapeError>([&] { positions(Tensor::zeros({1, 6, 8})); });
  EXPECT_TRUE(contains(m, "layer 'positions' (PositionEmbedding)")) << m;
  EXPECT_TRUE(contains(m, "6 positions")) << m;
  EXPECT_TRUE(contains(m, "truncate")) << m;
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { positions(Tensor::zeros({1, 2, 5})); }), "8 features"));
  EXPECT_TRUE(contains(error_message<ShapeError>([] {
                         models::PositionEmbedding(4)(Tensor::zeros({2, 3}));
                       }),
                       "[batch, positions, features]"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::PositionEmbedding bad(0); }), "sequence_length is 0"));
}

}  // namespace
}  // namespace kestrel
