// causal_lm_batch / causal_lm_labels, and the loss GPT trains with on [B, L] labels.
#include "models/gpt_data.h"

#include <gtest/gtest.h>

#include <cmath>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

using Ids = std::vector<std::int64_t>;

TEST(CausalLmBatch, ShiftsLabelsAndIgnoresPadding) {
  models::CausalLmBatch batch = models::causal_lm_batch({{5, 9, 2, 7}, {5, 3}});
  EXPECT_EQ(batch.inputs["input_ids"].to_vector<std::int64_t>(), (Ids{5, 9, 2, 7, 5, 3, 0, 0}));
  EXPECT_EQ(batch.inputs["attention_mask"].to_vector<std::int64_t>(), (Ids{1, 1, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(batch.labels.shape(), Shape({2, 4}));
  EXPECT_EQ(batch.labels.dtype(), DType::int64);
  EXPECT_EQ(batch.labels.to_vector<std::int64_t>(), (Ids{9, 2, 7, -100, 3, -100, -100, -100}));
}

TEST(CausalLmBatch, PadsToTheLengthAskedWithThePadId) {
  models::CausalLmBatch batch = models::causal_lm_batch({{4, 4, 4}, {}}, {.length = 5, .pad_id = 1});
  EXPECT_EQ(batch.inputs["input_ids"].to_vector<std::int64_t>(), (Ids{4, 4, 4, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(batch.labels.to_vector<std::int64_t>(), (Ids{4, 4, -100, -100, -100, -100, -100, -100, -100, -100}));
}

TEST(CausalLmLabels, WorksOnPaddedTensors) {
  Tensor ids = Tensor::from_vector<std::int32_t>({7, 8, 9, 0, 1, 2, 3, 4}, {2, 4});
  Tensor mask = Tensor::from_vector<float>({1, 1, 1, 0, 1, 1, 1, 1}, {2, 4});
  EXPECT_EQ(models::causal_lm_labels(ids, mask).to_vector<std::int64_t>(), (Ids{8, 9, -100, -100, 2, 3, 4, -100}));
  // No mask: every token is real.
  EXPECT_EQ(models::causal_lm_labels(ids).to_vector<std::int64_t>(), (Ids{8, 9, 0, -100, 2, 3, 4, -100}));
  // A single column has no next token at all.
  EXPECT_EQ(models::causal_lm_labels(Tensor::from_vector<std::int64_t>({3, 4}, {2, 1})).to_vector<std::int64_t>(),
            (Ids{-100, -100}));
}

TEST(CausalLmBatch, ErrorsSayWhatToChange) {
  std::string m = error_message<ShapeError>([] { models::causal_lm_batch({{1, 2, 3, 4}}, {.length = 3}); });
  EXPECT_TRUE(contains(m, "[causal_lm_batch]")) << m;
  EXPECT_TRUE(contains(m, "4 tokens but length is 3")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::causal_lm_batch({}); }), "no rows"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::causal_lm_batch({{}, {}}); }), "every row is empty"));
  EXPECT_TRUE(contains(error_message<ShapeError>([] {
                         models::causal_lm_labels(Tensor::zeros({2, 3}));
                       }),
                       "integer token ids"));
  EXPECT_TRUE(contains(error_message<ShapeError>([] {
                         models::causal_lm_labels(Tensor::zeros({2, 3}, DType::int64), Tensor::ones({2, 4}));
                       }),
                       "attention_mask is [2,4]"));
}

// The loss GPT is compiled with takes [B, L] labels against [B, L, vocab] logits, leaves -100 out
// of the sum and the mean's count, and sends no gradient to ignored positions.
TEST(CausalLmLoss, SparseCrossEntropyIgnoresPaddingOverSequences) {
  models::CausalLmBatch batch = models::causal_lm_batch({{5, 9, 2, 7}, {5, 3}});
  Tensor logits = random::normal({2, 4, 10}, random::Key(3));
  losses::SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -100});
  Tensor gradient;
  double value = 0.0;
  {
    GradientTape tape;
    tape.watch(logits);
    Tensor l = loss(batch.labels, logits);
    value = l.item();
    gradient = tape.gradient(l, {logits})[0];
  }
  const std::vector<float> z = logits.to_vector<float>();
  const Ids labels = batch.labels.to_vector<std::int64_t>();
  double total = 0.0;
  int counted = 0;
  for (std::size_t p = 0; p < labels.size(); ++p) {
    if (labels[p] == -100) continue;
    double sum = 0.0;
    for (std::size_t c = 0; c < 10; ++c) sum += std::exp(static_cast<double>(z[p * 10 + c]));
    total += std::log(sum) - z[p * 10 + static_cast<std::size_t>(labels[p])];
    ++counted;
  }
  ASSERT_EQ(counted, 4);
  EXPECT_NEAR(value, total / counted, 1e-5);
  const std::vector<float> g = gradient.to_vector<float>();
  for (std::size_t p = 0; p < labels.size(); ++p) {
    double row = 0.0;
    for (std::size_t c = 0; c < 10; ++c) row += std::abs(g[p * 10 + c]);
    if (labels[p] == -100) {
      EXPECT_EQ(row, 0.0) << "position " << p;
    } else {
      EXPECT_GT(row, 1e-3) << "position " << p;
    }
  }
}

}  // namespace
}  // namespace kestrel
