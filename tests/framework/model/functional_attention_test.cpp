// Layers with call options of their own in the Functional API: MultiHeadAttention(query, value,
// {.key, .attention_mask, .use_causal_mask}) and TransformerEncoder(x, {.attention_mask}) called
// on Keras tensors, their calls written with Keras's keyword arguments, and read back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/model/copy_weights.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using nlohmann::json;
using testing::contains;
using testing::copy_weights;
using testing::error_message;

constexpr std::int64_t kPositions = 6;
constexpr std::int64_t kVocabulary = 20;

// A BERT-style classifier: token ids and a padding mask in, a class out.
struct Encoder {
  Tensor ids = Input({kPositions}, {.name = "token_ids", .dtype = DType::int32});
  Tensor mask = Input({kPositions}, {.name = "padding_mask", .dtype = DType::int32});
  layers::Embedding embedding{kVocabulary, 8};
  layers::TransformerEncoder block{{.intermediate_dim = 16, .num_heads = 2}};
  layers::GlobalAveragePooling1D pool;
  layers::Dense head{3};
  std::unique_ptr<Model> model;

  Encoder() {
    const Tensor encoded = block(embedding(ids), {.attention_mask = mask});
    model = std::make_unique<Model>(Inputs{{"token_ids", ids}, {"padding_mask", mask}}, head(pool(encoded)), "encoder");
  }
};

Inputs token_batch(std::int64_t rows, std::uint64_t seed) {
  const Tensor ids = random::randint({rows, kPositions}, random::Key(seed), 1, kVocabulary);
  // The last two positions of every other row are padding.
  std::vector<std::int32_t> mask(static_cast<std::size_t>(rows * kPositions), 1);
  for (std::int64_t r = 0; r < rows; r += 2) {
    mask[static_cast<std::size_t>(r * kPositions + kPositions - 1)] = 0;
    mask[static_cast<std::size_t>(r * kPositions + kPositions - 2)] = 0;
  }
  return Inputs{{"token_ids", ids}, {"padding_mask", Tensor::from_vector<std::int32_t>(mask, {rows, kPositions})}};
}

TEST(FunctionalAttention, ATransformerEncoderTakesItsMaskAndRunsAsItsLayersDo) {
  clear_session();
  random::set_global_seed(3);
  Encoder encoder;
  const Inputs x = token_batch(4, 5);
  const Tensor direct = encoder.head(encoder.pool(
      encoder.block(encoder.embedding(x.named().at("token_ids")), {.attention_mask = x.named().at("padding_mask")})));
  EXPECT_EQ((*encoder.model)(x).to_vector<float>(), direct.to_vector<float>());
  // The mask matters: without it the padded rows come out differently.
  const Tensor unmasked = encoder.head(encoder.pool(encoder.block(encoder.embedding(x.named().at("token_ids")))));
  EXPECT_NE(unmasked.to_vector<float>(), direct.to_vector<float>());
}

TEST(FunctionalAttention, TheMaskIsAKerasKeywordArgumentAndTheConfigReadsBack) {
  clear_session();
  random::set_global_seed(4);
  Encoder encoder;
  const json config = encoder.model->get_config();
  const json& block = config.at("layers")[3];
  ASSERT_EQ(block.at("class_name"), "TransformerEncoder");
  const json& call = block.at("inbound_nodes")[0];
  EXPECT_EQ(call.at("args").size(), 1U);
  EXPECT_EQ(call.at("kwargs").at("padding_mask").at("config").at("keras_history"),
            json::parse(R"(["padding_mask", 0, 0])"));

  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->get_config(), config);
  copy_weights(*encoder.model, *copy);
  const Inputs x = token_batch(4, 6);
  EXPECT_EQ((*copy)(x).to_vector<float>(), (*encoder.model)(x).to_vector<float>());
}

TEST(FunctionalAttention, MultiHeadAttentionTakesQueryValueAndKeywordsAsKerasRecordsThem) {
  clear_session();
  random::set_global_seed(5);
  const Tensor queries = Input({4, 8}, {.name = "queries"});
  const Tensor memory = Input({kPositions, 8}, {.name = "memory"});
  const Tensor keys = Input({kPositions, 8}, {.name = "keys"});
  // A temporary layer moves into its call; the causal self-attention runs on the cross-attention.
  const Tensor crossed = layers::MultiHeadAttention(2, 4, {.name = "cross"})(queries, memory, {.key = keys});
  const Tensor out = layers::MultiHeadAttention(2, 4, {.name = "causal"})(crossed, crossed, {.use_causal_mask = true});
  Model model(Inputs{{"queries", queries}, {"memory", memory}, {"keys", keys}}, out, "attention");

  const json config = model.get_config();
  json cross, causal;
  for (const json& layer : config.at("layers")) {
    if (layer.at("name") == "cross") cross = layer.at("inbound_nodes")[0];
    if (layer.at("name") == "causal") causal = layer.at("inbound_nodes")[0];
  }
  ASSERT_EQ(cross.at("args").size(), 2U);  // query and value, then the key by keyword
  EXPECT_EQ(cross.at("args")[1].at("config").at("keras_history"), json::parse(R"(["memory", 0, 0])"));
  EXPECT_EQ(cross.at("kwargs").at("key").at("config").at("keras_history"), json::parse(R"(["keys", 0, 0])"));
  EXPECT_EQ(causal.at("kwargs"), json::parse(R"({"use_causal_mask": true})"));

  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->get_config(), config);
  copy_weights(model, *copy);
  const Inputs x{{"queries", random::normal({2, 4, 8}, random::Key(1))},
                 {"memory", random::normal({2, kPositions, 8}, random::Key(2))},
                 {"keys", random::normal({2, kPositions, 8}, random::Key(3))}};
  EXPECT_EQ((*copy)(x).to_vector<float>(), model(x).to_vector<float>());
}

TEST(FunctionalAttention, ACallWithArgumentsTheLayerDoesNotTakeIsAnErrorNamingIt) {
  clear_session();
  Encoder encoder;
  json config = encoder.model->get_config();
  json& call = config.at("layers")[3].at("inbound_nodes")[0];
  call.at("kwargs")["bogus_mask"] = call.at("kwargs").at("padding_mask");
  std::string m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, "transformer_encoder")) << m;
  EXPECT_TRUE(contains(m, "'bogus_mask'")) << m;

  config = encoder.model->get_config();
  config.at("layers")[5].at("inbound_nodes")[0].at("kwargs")["use_causal_mask"] = true;  // the Dense head
  m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, "layer 'dense' (Dense)")) << m;
  EXPECT_TRUE(contains(m, "no keyword arguments")) << m;
}

TEST(FunctionalAttention, AFunctionalEncoderTrainsEagerlyAndCompiledAlike) {
  std::vector<double> final_loss;
  for (const bool jit : {false, true}) {
    clear_session();
    random::set_global_seed(6);
    Encoder encoder;
    encoder.model->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                            .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                            .jit_compile = jit});
    const Inputs x = token_batch(32, 7);
    // The class is the first token's id modulo 3: learnable from the sequence.
    const std::vector<std::int32_t> ids = x.named().at("token_ids").to_vector<std::int32_t>();
    std::vector<std::int32_t> classes;
    for (std::size_t r = 0; r < 32; ++r) classes.push_back(ids[r * kPositions] % 3);
    const Tensor y = Tensor::from_vector<std::int32_t>(classes, {32});
    const History history = encoder.model->fit(x, y, {.batch_size = 8, .epochs = 4, .verbose = 0});
    const std::vector<double>& losses = history.history.at("loss");
    EXPECT_LT(losses.back(), losses.front()) << (jit ? "compiled" : "eager");
    final_loss.push_back(losses.back());
  }
  EXPECT_NEAR(final_loss[0], final_loss[1], 1e-3 * std::abs(final_loss[0]));
}

}  // namespace
}  // namespace kestrel
