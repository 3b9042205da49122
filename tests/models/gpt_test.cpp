// GPT: shapes, parameter counts, names, initialization, causality, masking and errors.
#include "models/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/ops.h"
#include "tests/models/bert_test_util.h"
#include "tests/models/gpt_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::max_abs_diff;
using testing::small_gpt;

class GptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(13);
  }
};

// Positions [begin, begin + count) of x [B, L, ...].
Tensor positions(const Tensor& x, std::int64_t begin, std::int64_t count) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(x.rank()), 0);
  std::vector<std::int64_t> size(static_cast<std::size_t>(x.rank()), -1);
  start[1] = begin;
  size[1] = count;
  return ops::slice(x, start, size);
}

Tensor ids_of(const std::vector<std::int64_t>& values, std::int64_t rows) {
  return Tensor::from_vector<std::int64_t>(values, {rows, static_cast<std::int64_t>(values.size()) / rows});
}

TEST_F(GptTest, GivesLogitsForEveryPosition) {
  models::GPT model(small_gpt());
  Tensor ids = random::randint({3, 7}, random::Key(1), 0, 32);
  EXPECT_EQ(model(ids).shape(), Shape({3, 7, 32}));
  EXPECT_EQ(model.sequence_output(ids).shape(), Shape({3, 7, 16}));
  EXPECT_EQ(model.name(), "gpt");
  EXPECT_EQ(model.class_name(), "GPT");
}

TEST_F(GptTest, TakesAnUnnamedTensorAsInputIds) {
  models::GPT model(small_gpt());
  Tensor ids = random::randint({2, 5}, random::Key(2), 0, 32);
  EXPECT_EQ(max_abs_diff(model(ids), model(Inputs{{"input_ids", ids}})), 0.0);
  EXPECT_EQ(max_abs_diff(model(ids), model(ops::cast(ids, DType::int32))), 0.0);
}

TEST_F(GptTest, DefaultsAreTheBenchGptTiny) {
  models::GPT model;
  model.build({1, 8});
  // BENCH.md GPT-tiny: token 8192x256 (also the output projection), positions 128x256, 4 pre-LN
  // blocks (qkv + out 256x256 with biases, FFN 1024), final LN.
  EXPECT_EQ(model.count_params(), 5289472);
  ASSERT_EQ(model.transformer_layers().size(), 4u);
  const layers::TransformerEncoder& block = *model.transformer_layers()[0];
  EXPECT_TRUE(block.options().normalize_first);
  EXPECT_EQ(block.options().layer_norm_epsilon, 1e-5);
  EXPECT_EQ(block.options().activation.name(), "gelu_approximate");
  EXPECT_EQ(block.self_attention()->num_heads(), 4);
  EXPECT_EQ(block.self_attention()->key_dim(), 64);
  EXPECT_EQ(model.options().dropout, 0.1);
  std::ostringstream out;
  model.summary(out);
  const std::string table = out.str();
  for (const char* row :
       {"token_embedding (Embedding)", "position_embedding (PositionEmbedding)", "embeddings_dropout (Dropout)",
        "transformer_layer_0 (TransformerEncoder)", "transformer_layer_3 (TransformerEncoder)",
        "final_layer_norm (LayerNormalization)", "Total params: 5,289,472", "(None, 8, 256)"}) {
    EXPECT_TRUE(contains(table, row)) << row << " missing from\n" << table;
  }
}

TEST_F(GptTest, CountsParametersAsByHand) {
  models::GPT model(small_gpt());
  model.build({2, 8});
  const std::int64_t v = 32, h = 16, ffn = 32, positions = 24;
  const std::int64_t attention = 4 * (h * h + h);
  const std::int64_t block = 2 * (2 * h) + attention + (h * ffn + ffn) + (ffn * h + h);
  // No output matrix: the logits reuse the v x h token table.
  EXPECT_EQ(model.count_params(), v * h + positions * h + 2 * block + 2 * h);
}

TEST_F(GptTest, WeightNamesReadWell) {
  models::GPT model(small_gpt());
  model.build({1, 4});
  std::vector<std::string> names;
  for (const Variable& w : model.weights()) names.push_back(w.name());
  ASSERT_EQ(names.size(), 2u + 2 * 16u + 2u);
  EXPECT_EQ(names[0], "token_embedding/embeddings");
  EXPECT_EQ(names[1], "position_embedding/embeddings");
  EXPECT_EQ(names[2], "transformer_layer_0/self_attention_layer/query/kernel");
  EXPECT_EQ(names[18], "transformer_layer_1/self_attention_layer/query/kernel");
  EXPECT_EQ(names[34], "final_layer_norm/gamma");
  EXPECT_EQ(names.back(), "final_layer_norm/beta");
}

TEST_F(GptTest, InitializesAsGpt2) {
  models::GPT model({.hidden_size = 64, .num_layers = 1, .num_heads = 2, .intermediate_size = 64});
  model.build({1, 4});
  // N(0, 0.02), not truncated: the 8192 x 64 table has a mean near 0, a stddev near 0.02, and
  // some entries beyond two standard deviations.
  for (const Variable* w : {&model.token_embedding().embeddings(), &model.position_embedding().embeddings()}) {
    const std::vector<float> values = w->value().to_vector<float>();
    double sum = 0.0, squares = 0.0;
    std::size_t beyond = 0;
    for (float x : values) {
      sum += x;
      squares += static_cast<double>(x) * x;
      beyond += std::abs(x) > 0.04f ? 1 : 0;
    }
    const double n = static_cast<double>(values.size());
    EXPECT_NEAR(sum / n, 0.0, 2e-3) << w->name();
    EXPECT_NEAR(std::sqrt(squares / n), 0.02, 1.5e-3) << w->name();
    EXPECT_GT(beyond, 0u) << w->name();
  }
  const Variable& kernel = model.transformer_layers()[0]->self_attention()->query_dense().kernel();
  double squares = 0.0;
  const std::vector<float> values = kernel.value().to_vector<float>();
  for (float x : values) squares += static_cast<double>(x) * x;
  EXPECT_NEAR(std::sqrt(squares / static_cast<double>(values.size())), 0.02, 2e-3);
}

TEST_F(GptTest, LaterTokensDoNotChangeEarlierLogits) {
  models::GPT model(small_gpt());
  Tensor ids = ids_of({3, 9, 4, 17, 5, 8, 21, 30, 1, 2, 11, 12, 13, 14}, 2);
  Tensor later = ids_of({3, 9, 4, 17, 25, 26, 27, 30, 1, 2, 11, 0, 0, 0}, 2);
  Tensor a = model(ids);
  Tensor b = model(later);
  // Rows agree on positions 0..3: their logits agree; position 4 onwards differs.
  EXPECT_LT(max_abs_diff(positions(a, 0, 4), positions(b, 0, 4)), 1e-6);
  EXPECT_GT(max_abs_diff(positions(a, 4, 3), positions(b, 4, 3)), 1e-4);
}

TEST_F(GptTest, RightPaddingChangesNoRealPosition) {
  models::GPT model(small_gpt());
  const std::vector<std::vector<std::int64_t>> rows{{3, 9, 4, 17, 5}, {8, 21}, {30, 1, 2, 11, 12, 13, 14}};
  Inputs short_pad = testing::padded(rows, 7);
  Inputs long_pad = testing::padded(rows, 20, /*pad_id=*/6);
  const Tensor a = model(short_pad);
  const Tensor b = model(long_pad);
  // Without a mask too: right padding only ever comes after the real tokens.
  const Tensor unmasked = model(long_pad["input_ids"]);
  for (std::int64_t r = 0; r < 3; ++r) {
    const auto real = static_cast<std::int64_t>(rows[static_cast<std::size_t>(r)].size());
    auto row = [&](const Tensor& logits) { return ops::slice(logits, {r, 0, 0}, {1, real, -1}); };
    EXPECT_LT(max_abs_diff(row(a), row(b)), 1e-5) << "row " << r;
    EXPECT_LT(max_abs_diff(row(unmasked), row(b)), 1e-5) << "row " << r;
  }
}

TEST_F(GptTest, AttentionMaskHidesMaskedTokensFromLaterPositions) {
  models::GPT model(small_gpt());
  Tensor ids = ids_of({3, 9, 4, 17, 5, 8}, 1);
  Tensor other = ids_of({3, 29, 4, 17, 5, 8}, 1);
  Tensor mask = ids_of({1, 0, 1, 1, 1, 1}, 1);
  // Position 1 is masked: what it holds reaches no other position's logits.
  Tensor a = model(Inputs{{"input_ids", ids}, {"attention_mask", mask}});
  Tensor b = model(Inputs{{"input_ids", other}, {"attention_mask", mask}});
  EXPECT_LT(max_abs_diff(positions(a, 2, 4), positions(b, 2, 4)), 1e-5);
  // Unmasked, it does.
  EXPECT_GT(max_abs_diff(positions(model(ids), 2, 4), positions(model(other), 2, 4)), 1e-4);
}

TEST_F(GptTest, DropoutActsOnlyWhileTraining) {
  models::GPTOptions o = small_gpt();
  o.dropout = 0.3;
  models::GPT model(o);
  Tensor ids = random::randint({2, 6}, random::Key(3), 0, 32);
  Tensor inference = model(ids);
  EXPECT_EQ(max_abs_diff(inference, model(ids)), 0.0);
  EXPECT_GT(max_abs_diff(inference, model(ids, /*training=*/true)), 1e-3);
}

TEST_F(GptTest, TooLongInputNamesTheModelAndTheFix) {
  models::GPT model(small_gpt());
  std::string m = error_message<ShapeError>([&] { model(Tensor::zeros({1, 30}, DType::int64)); });
  EXPECT_TRUE(contains(m, "model 'gpt' (GPT)")) << m;
  EXPECT_TRUE(contains(m, "length 30")) << m;
  EXPECT_TRUE(contains(m, "max_length is 24")) << m;
  EXPECT_TRUE(contains(m, "cut the text into windows")) << m;
}

TEST_F(GptTest, IdsOutsideTheVocabularyAreCaught) {
  models::GPT model(small_gpt());
  for (std::int64_t bad : {32, 1000, -1}) {
    std::string m = error_message<IndexError>([&] { model(ids_of({1, 5, bad}, 1)); });
    EXPECT_TRUE(contains(m, "model 'gpt'")) << m;
    EXPECT_TRUE(contains(m, "token_embedding")) << m;
    EXPECT_TRUE(contains(m, "vocab_size is 32")) << m;
  }
}

TEST_F(GptTest, BadInputsAreRefusedWithTheFix) {
  models::GPT model(small_gpt());
  Tensor ids = Tensor::zeros({2, 4}, DType::int64);
  EXPECT_TRUE(contains(error_message<ShapeError>([&] {
                         model(Inputs{{"input_ids", ids}, {"attention_mask", Tensor::ones({2, 5}, DType::int64)}});
                       }),
                       "attention_mask is [2,5] but input_ids are [2,4]"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         model(Inputs{{"input_ids", ids}, {"token_type_ids", ids}});
                       }),
                       "unknown input 'token_type_ids'"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { model(Inputs{{"attention_mask", ids}}); }), "input_ids"));
  EXPECT_TRUE(contains(error_message<TypeError>([&] { model(Tensor::zeros({2, 4})); }), "integer token ids"));
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { model(Tensor::zeros({8}, DType::int64)); }), "[batch, length]"));
}

TEST_F(GptTest, BadOptionsAreRefused) {
  std::string m = error_message<ValueError>([] { models::GPT({.hidden_size = 30, .num_heads = 4}); });
  EXPECT_TRUE(contains(m, "GPT")) << m;
  EXPECT_TRUE(contains(m, "num_heads dividing hidden_size")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::GPT({.dropout = 1.0}); }), "[0, 1)"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::GPT({.max_length = 0}); }), "max_length"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::GPT({.vocab_size = -3}); }), "vocab_size is -3"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::GPT({.hidden_act = "gleu"}); }), "gleu"));
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { models::GPT({.layer_norm_epsilon = 0.0}); }), "layer_norm_epsilon"));
}

}  // namespace
}  // namespace kestrel
