// GPT::generate: greedy decoding, seeded top-k sampling, the max_length stop, and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "models/gpt.h"
#include "tests/models/gpt_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::small_gpt;
using Ids = std::vector<std::int64_t>;

class GptGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(19);
  }
};

Tensor prompt() { return Tensor::from_vector<std::int64_t>({3, 9, 4, 17, 1, 2, 11, 12}, {2, 4}); }

// The logits of the last position of ids [B, L]: [B, vocab].
Tensor last_logits(models::GPT& model, const Tensor& ids) {
  const Tensor logits = model(ids);
  const std::int64_t length = ids.shape()[1];
  return ops::reshape(ops::slice(logits, {0, length - 1, 0}, {-1, 1, -1}), {ids.shape()[0], -1});
}

TEST_F(GptGenerateTest, GreedyIsArgmaxStepByStep) {
  models::GPT model(small_gpt());
  const Tensor out = model.generate(prompt(), {.max_new_tokens = 6});
  ASSERT_EQ(out.shape(), Shape({2, 10}));
  EXPECT_EQ(out.dtype(), DType::int64);
  Tensor ids = prompt();
  for (int step = 0; step < 6; ++step) {
    const Tensor next = ops::reshape(ops::argmax(last_logits(model, ids), -1), {2, 1});
    ids = ops::concat({ids, next}, 1);
  }
  EXPECT_EQ(out.to_vector<std::int64_t>(), ids.to_vector<std::int64_t>());
}

TEST_F(GptGenerateTest, TheSameSeedGivesTheSameTokens) {
  models::GPT model(small_gpt());
  const models::GenerateOptions options{.max_new_tokens = 12, .top_k = 32, .temperature = 3.0, .seed = 42};
  const Ids a = model.generate(prompt(), options).to_vector<std::int64_t>();
  const Ids b = model.generate(prompt(), options).to_vector<std::int64_t>();
  EXPECT_EQ(a, b);
  models::GenerateOptions other = options;
  other.seed = 43;
  // 24 draws from nearly flat distributions over 32 tokens: another seed differs somewhere.
  EXPECT_NE(model.generate(prompt(), other).to_vector<std::int64_t>(), a);
  // Sampling is not greedy decoding.
  EXPECT_NE(model.generate(prompt(), {.max_new_tokens = 12}).to_vector<std::int64_t>(), a);
}

TEST_F(GptGenerateTest, TopKOneIsGreedy) {
  models::GPT model(small_gpt());
  const Ids greedy = model.generate(prompt(), {.max_new_tokens = 8}).to_vector<std::int64_t>();
  for (std::uint64_t seed : {0u, 1u, 2u}) {
    EXPECT_EQ(model.generate(prompt(), {.max_new_tokens = 8, .top_k = 1, .temperature = 0.5, .seed = seed})
                  .to_vector<std::int64_t>(),
              greedy);
  }
}

TEST_F(GptGenerateTest, SamplesOnlyAmongTheTopK) {
  models::GPT model(small_gpt());
  Tensor ids = prompt();
  const Tensor out = model.generate(ids, {.max_new_tokens = 10, .top_k = 3, .temperature = 5.0, .seed = 7});
  const Ids tokens = out.to_vector<std::int64_t>();
  for (std::int64_t length = 4; length < 14; ++length) {
    const Tensor so_far = ops::slice(out, {0, 0}, {-1, length});
    const std::vector<float> logits = last_logits(model, so_far).to_vector<float>();
    for (std::int64_t row = 0; row < 2; ++row) {
      const float* z = logits.data() + row * 32;
      const float chosen = z[tokens[static_cast<std::size_t>(row * 14 + length)]];
      const auto above = std::count_if(z, z + 32, [&](float x) { return x > chosen; });
      EXPECT_LT(above, 3) << "row " << row << " position " << length;
    }
  }
}

TEST_F(GptGenerateTest, StopsAtMaxLengthAndKeepsThePromptDtype) {
  models::GPT model(small_gpt());  // max_length 24
  const Tensor ids = ops::cast(random::randint({3, 20}, random::Key(4), 0, 32), DType::int32);
  const Tensor out = model.generate(ids, {.max_new_tokens = 100});
  EXPECT_EQ(out.shape(), Shape({3, 24}));
  EXPECT_EQ(out.dtype(), DType::int32);
  EXPECT_EQ(ops::slice(out, {0, 0}, {-1, 20}).to_vector<std::int32_t>(), ids.to_vector<std::int32_t>());
  EXPECT_EQ(model.generate(ids, {.max_new_tokens = 0}).to_vector<std::int32_t>(), ids.to_vector<std::int32_t>());
  const Tensor full = random::randint({1, 24}, random::Key(5), 0, 32);
  EXPECT_EQ(model.generate(full).shape(), Shape({1, 24}));
}

TEST_F(GptGenerateTest, BadPromptsAndOptionsAreRefused) {
  models::GPT model(small_gpt());
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { model.generate(Tensor::zeros({1, 3})); }), "integer token ids"));
  EXPECT_TRUE(
      contains(error_message<ShapeError>([&] { model.generate(Tensor::zeros({5}, DType::int64)); }), "[1, length]"));
  std::string m = error_message<ShapeError>([&] { model.generate(Tensor::zeros({1, 30}, DType::int64)); });
  EXPECT_TRUE(contains(m, "model 'gpt' (GPT)")) << m;
  EXPECT_TRUE(contains(m, "keep the last 24 tokens")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([&] { model.generate(prompt(), {.top_k = -1}); }), "top_k = 0"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { model.generate(prompt(), {.top_k = 5, .temperature = 0.0}); }),
                       "temperature 0"));
  EXPECT_TRUE(
      contains(error_message<ValueError>([&] { model.generate(prompt(), {.max_new_tokens = -2}); }), "max_new_tokens"));
  EXPECT_TRUE(contains(error_message<IndexError>([&] {
                         model.generate(Tensor::from_vector<std::int64_t>({1, 99}, {1, 2}));
                       }),
                       "vocab_size is 32"));
}

}  // namespace
}  // namespace kestrel
