// BertClassifier: shapes, parameter counts, names, summary, masking and its errors.
#include "models/bert_classifier.h"

#include <gtest/gtest.h>

#include <sstream>

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
using testing::padded;
using testing::small_bert;

class BertClassifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(11);
  }
};

TEST_F(BertClassifierTest, GivesLogitsAndSequenceOutput) {
  models::BertClassifier model(small_bert());
  Inputs in = padded({{1, 7, 9, 2}, {1, 4}}, 6);
  EXPECT_EQ(model(in).shape(), Shape({2, 3}));
  EXPECT_EQ(model.sequence_output(in).shape(), Shape({2, 6, 16}));
  EXPECT_EQ(model.name(), "bert_classifier");
  EXPECT_EQ(model.class_name(), "BertClassifier");
}

TEST_F(BertClassifierTest, TakesAnUnnamedTensorAsInputIds) {
  models::BertClassifier model(small_bert());
  Tensor ids = random::randint({3, 5}, random::Key(1), 0, 32);
  Tensor a = model(ids);
  Tensor b = model(Inputs{{"input_ids", ids}});
  EXPECT_EQ(a.shape(), Shape({3, 3}));
  EXPECT_EQ(max_abs_diff(a, b), 0.0);
}

TEST_F(BertClassifierTest, CountsParametersAsByHand) {
  models::BertOptions o = small_bert();
  o.type_vocab_size = 2;
  models::BertClassifier model(o);
  model.build({2, 8});
  const std::int64_t v = 32, h = 16, ffn = 32, positions = 32, types = 2, classes = 3;
  const std::int64_t embeddings = v * h + positions * h + types * h + 2 * h;
  const std::int64_t attention = 4 * (h * h + h);
  const std::int64_t block = attention + 2 * (2 * h) + (h * ffn + ffn) + (ffn * h + h);
  const std::int64_t head = (h * h + h) + (h * classes + classes);
  EXPECT_EQ(model.count_params(), embeddings + 2 * block + head);

  models::BertClassifier bare({.vocab_size = 32,
                               .hidden_size = 16,
                               .num_layers = 1,
                               .num_heads = 2,
                               .intermediate_size = 32,
                               .max_length = 32,
                               .num_classes = 3,
                               .use_pooler = false});
  bare.build({1, 4});
  EXPECT_EQ(bare.count_params(), embeddings - types * h + block + (h * classes + classes));
  EXPECT_EQ(bare.pooler(), nullptr);
  EXPECT_EQ(bare.token_type_embedding(), nullptr);
}

TEST_F(BertClassifierTest, DefaultsAreTheBenchBertTiny) {
  models::BertClassifier model;
  model.build({1, 8});
  // BENCH.md: token 8192x128, positions 128x128, 2 post-LN blocks (FFN 512), pooler, 2 classes.
  EXPECT_EQ(model.count_params(), 1478530);
  EXPECT_EQ(model.encoder_layers().size(), 2u);
  EXPECT_EQ(model.encoder_layers()[0]->options().activation.name(), "gelu");
  EXPECT_EQ(model.encoder_layers()[0]->self_attention()->key_dim(), 64);
  std::ostringstream out;
  model.summary(out);
  const std::string table = out.str();
  for (const char* row :
       {"token_embedding (Embedding)", "position_embedding (PositionEmbedding)",
        "embeddings_layer_norm (LayerNormalization)", "embeddings_dropout (Dropout)",
        "transformer_layer_0 (TransformerEncoder)", "transformer_layer_1 (TransformerEncoder)", "pooled_dense (Dense)",
        "output_dropout (Dropout)", "logits (Dense)", "Total params: 1,478,530", "(None, 8, 128)", "(None, 2)"}) {
    EXPECT_TRUE(contains(table, row)) << row << " missing from\n" << table;
  }
}

TEST_F(BertClassifierTest, WeightNamesReadWell) {
  models::BertOptions o = small_bert();
  o.type_vocab_size = 2;
  models::BertClassifier model(o);
  model.build({1, 4});
  std::vector<std::string> names;
  for (const Variable& w : model.weights()) names.push_back(w.name());
  ASSERT_EQ(names.size(), 5u + 2 * 16u + 4u);
  EXPECT_EQ(names[0], "token_embedding/embeddings");
  EXPECT_EQ(names[1], "position_embedding/embeddings");
  EXPECT_EQ(names[2], "token_type_embedding/embeddings");
  EXPECT_EQ(names[3], "embeddings_layer_norm/gamma");
  EXPECT_EQ(names[5], "transformer_layer_0/self_attention_layer/query/kernel");
  EXPECT_EQ(names[21], "transformer_layer_1/self_attention_layer/query/kernel");
  EXPECT_EQ(names[37], "pooled_dense/kernel");
  EXPECT_EQ(names.back(), "logits/bias");
}

TEST_F(BertClassifierTest, InitializesAsBert) {
  models::BertClassifier model(small_bert());
  model.build({1, 4});
  // Truncated normal, stddev 0.02: nothing beyond two standard deviations.
  for (float x : model.token_embedding().embeddings().value().to_vector<float>()) EXPECT_LE(std::abs(x), 0.04f);
  for (float x : model.classifier().kernel().value().to_vector<float>()) EXPECT_LE(std::abs(x), 0.04f);
}

// The real tokens' vectors: rows [0, length) of sequence_output, per batch row.
Tensor real_positions(const Tensor& sequence, std::int64_t length) {
  return ops::slice(sequence, {0, 0, 0}, {sequence.shape()[0], length, sequence.shape()[2]});
}

TEST_F(BertClassifierTest, MaskedPositionsDoNotMatter) {
  models::BertClassifier model(small_bert());
  Inputs in = padded({{1, 7, 9, 2, 11}, {1, 4, 3}}, 8);
  Tensor before = model(in);
  Tensor sequence_before = real_positions(model.sequence_output(in), 3);
  // Other ids under the mask: neither the logits nor the real tokens' vectors may move.
  Tensor other = Tensor::from_vector<std::int64_t>({1, 7, 9, 2, 11, 30, 29, 28, 1, 4, 3, 17, 18, 19, 20, 21}, {2, 8});
  Inputs changed{{"input_ids", other}, {"attention_mask", in["attention_mask"]}};
  EXPECT_LT(max_abs_diff(before, model(changed)), 1e-6);
  EXPECT_LT(max_abs_diff(sequence_before, real_positions(model.sequence_output(changed), 3)), 1e-5);
  // Without the mask the same change shows, so the checks above are not vacuous.
  Tensor unmasked_before = model.sequence_output(Inputs{{"input_ids", in["input_ids"]}});
  Tensor unmasked_after = model.sequence_output(Inputs{{"input_ids", other}});
  EXPECT_GT(max_abs_diff(real_positions(unmasked_before, 3), real_positions(unmasked_after, 3)), 1e-3);
}

TEST_F(BertClassifierTest, PaddingLengthDoesNotChangeLogits) {
  models::BertClassifier model(small_bert());
  const std::vector<std::vector<std::int64_t>> rows{{1, 5, 9, 12, 2}, {1, 20, 2}, {1, 3, 4, 5, 6, 7, 2}};
  Inputs short_pad = padded(rows, 8);
  Inputs long_pad = padded(rows, 32, /*pad_id=*/3);
  EXPECT_LT(max_abs_diff(model(short_pad), model(long_pad)), 1e-5);
  // The token vectors (unit scale after the layer norms) agree too, not only the small logits.
  EXPECT_LT(max_abs_diff(real_positions(model.sequence_output(short_pad), 3),
                         real_positions(model.sequence_output(long_pad), 3)),
            1e-5);
}

TEST_F(BertClassifierTest, AbsentMaskMeansAllTokensAreReal) {
  models::BertClassifier model(small_bert());
  Tensor ids = random::randint({2, 6}, random::Key(3), 0, 32);
  Tensor ones = Tensor::ones({2, 6}, DType::int64);
  Tensor unmasked = model(Inputs{{"input_ids", ids}});
  EXPECT_LT(max_abs_diff(unmasked, model(Inputs{{"input_ids", ids}, {"attention_mask", ones}})), 1e-6);
}

TEST_F(BertClassifierTest, AbsentTokenTypesMeanSegmentZero) {
  models::BertOptions o = small_bert();
  o.type_vocab_size = 2;
  models::BertClassifier model(o);
  Tensor ids = random::randint({2, 6}, random::Key(4), 0, 32);
  Tensor zeros = Tensor::zeros({2, 6}, DType::int64);
  Tensor plain = model(Inputs{{"input_ids", ids}});
  EXPECT_LT(max_abs_diff(plain, model(Inputs{{"input_ids", ids}, {"token_type_ids", zeros}})), 1e-6);
  Tensor second = Tensor::ones({2, 6}, DType::int64);
  EXPECT_GT(max_abs_diff(plain, model(Inputs{{"input_ids", ids}, {"token_type_ids", second}})), 1e-4);
}

TEST_F(BertClassifierTest, DropoutActsOnlyWhileTraining) {
  models::BertOptions o = small_bert();
  o.dropout = 0.3;
  models::BertClassifier model(o);
  Inputs in = padded({{1, 7, 9, 2, 11}, {1, 4, 3}}, 6);
  Tensor inference = model.sequence_output(in);
  EXPECT_EQ(max_abs_diff(inference, model.sequence_output(in)), 0.0);
  EXPECT_GT(max_abs_diff(inference, model.sequence_output(in, /*training=*/true)), 1e-2);
}

TEST_F(BertClassifierTest, TooLongInputNamesTheModelAndTheFix) {
  models::BertClassifier model(small_bert());
  Tensor ids = Tensor::zeros({1, 40}, DType::int64);
  std::string m = error_message<ShapeError>([&] { model(ids); });
  EXPECT_TRUE(contains(m, "model 'bert_classifier' (BertClassifier)")) << m;
  EXPECT_TRUE(contains(m, "length 40")) << m;
  EXPECT_TRUE(contains(m, "max_length is 32")) << m;
  EXPECT_TRUE(contains(m, "truncate with the tokenizer's max_length")) << m;
}

TEST_F(BertClassifierTest, IdsOutsideTheVocabularyAreCaught) {
  models::BertClassifier model(small_bert());
  for (std::int64_t bad : {32, 1000, -1}) {
    Tensor ids = Tensor::from_vector<std::int64_t>({1, 5, bad}, {1, 3});
    std::string m = error_message<IndexError>([&] { model(ids); });
    EXPECT_TRUE(contains(m, "bert_classifier")) << m;
    EXPECT_TRUE(contains(m, "token_embedding")) << m;
    EXPECT_TRUE(contains(m, "vocab_size is 32")) << m;
  }
}

TEST_F(BertClassifierTest, BadInputsAreRefusedWithTheFix) {
  models::BertClassifier model(small_bert());
  Tensor ids = Tensor::zeros({2, 4}, DType::int64);
  EXPECT_TRUE(contains(error_message<ShapeError>([&] {
                         model(Inputs{{"input_ids", ids}, {"attention_mask", Tensor::ones({2, 5}, DType::int64)}});
                       }),
                       "attention_mask is [2,5] but input_ids are [2,4]"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         model(Inputs{{"input_ids", ids}, {"token_type_ids", ids}});
                       }),
                       ".type_vocab_size = 2"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         model(Inputs{{"input_ids", ids}, {"attention_masks", ids}});
                       }),
                       "unknown input 'attention_masks'"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { model(Inputs{{"attention_mask", ids}}); }), "input_ids"));
  EXPECT_TRUE(contains(error_message<TypeError>([&] { model(Tensor::zeros({2, 4})); }), "integer token ids"));
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { model(Tensor::zeros({8}, DType::int64)); }), "[batch, length]"));
}

TEST_F(BertClassifierTest, BadOptionsAreRefused) {
  std::string m = error_message<ValueError>([] { models::BertClassifier({.hidden_size = 30, .num_heads = 4}); });
  EXPECT_TRUE(contains(m, "BertClassifier")) << m;
  EXPECT_TRUE(contains(m, "num_heads dividing hidden_size")) << m;
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::BertClassifier({.dropout = 1.0}); }), "[0, 1)"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::BertClassifier({.max_length = 0}); }), "max_length"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { models::BertClassifier({.hidden_act = "gleu"}); }), "gleu"));
}

}  // namespace
}  // namespace kestrel
