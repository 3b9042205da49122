// GPT's tied embedding: one Variable is both the input table and the output projection, through
// weights(), parameter counts, gradients, optimizer steps and weight files.
#include <gtest/gtest.h>

#include <filesystem>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "models/gpt.h"
#include "models/gpt_data.h"
#include "tests/framework/layers/layer_test_util.h"
#include "tests/models/bert_test_util.h"
#include "tests/models/gpt_test_util.h"
#include "tests/models/scratch_file.h"

namespace kestrel {
namespace {

using testing::max_abs_diff;
using testing::scratch_file;
using testing::small_gpt;

class GptTyingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(17);
  }
};

// Rows of ids in [1, 20): tokens 20..31 never appear as inputs, only as possible outputs.
models::CausalLmBatch some_text() {
  return models::causal_lm_batch({{1, 5, 9, 2, 7, 7, 3}, {4, 8, 15, 16}, {19, 18, 17, 6, 5}}, {.length = 8});
}

Tensor by_hand_logits(models::GPT& model, const Inputs& inputs) {
  return ops::matmul(model.sequence_output(inputs), model.token_embedding().embeddings().value(),
                     {.transpose_b = true});
}

TEST_F(GptTyingTest, TheOutputProjectionIsTheInputEmbedding) {
  models::GPT model(small_gpt());
  const Inputs x = some_text().inputs;
  model(x);
  const Variable& table = model.token_embedding().embeddings();
  EXPECT_TRUE(model.output_embeddings().is_same(table));
  int listed = 0;
  for (const Variable& w : model.weights()) listed += w.is_same(table) ? 1 : 0;
  EXPECT_EQ(listed, 1);
  std::int64_t by_variable = 0;
  for (const Variable& w : model.weights()) by_variable += w.shape().numel();
  EXPECT_EQ(model.count_params(), by_variable);

  EXPECT_LT(max_abs_diff(model(x), by_hand_logits(model, x)), 1e-6);
  // The projection reads the variable at each call, not a copy taken at build time.
  const Tensor before = model(x);
  table.assign(random::normal(table.shape(), random::Key(5), 0.0, 0.02));
  const Tensor after = model(x);
  EXPECT_GT(max_abs_diff(before, after), 1e-3);
  EXPECT_LT(max_abs_diff(after, by_hand_logits(model, x)), 1e-6);
}

TEST_F(GptTyingTest, TheTableGetsGradientFromBothUses) {
  models::GPTOptions o = small_gpt();
  o.num_layers = 1;
  models::GPT model(o);
  const models::CausalLmBatch batch = some_text();
  model(batch.inputs);
  const Variable& table = model.token_embedding().embeddings();
  Tensor gradient;
  {
    GradientTape tape;
    Tensor loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})(
        batch.labels, model(batch.inputs, /*training=*/true));
    gradient = tape.gradient(loss, {table.value()})[0];
  }
  // Rows of ids that are never inputs get gradient through the output projection alone; rows of
  // input ids get it through the lookup too. Both must reach the one variable.
  auto row_norm = [&](std::int64_t id) { return ops::sum(ops::abs(ops::slice(gradient, {id, 0}, {1, -1}))).item(); };
  EXPECT_GT(row_norm(25), 1e-6);
  EXPECT_GT(row_norm(5), 1e-6);

  // And the gradient is the loss's: finite differences through both uses at once.
  GradcheckResult r = testing::weight_gradcheck([&] { return model(batch.inputs); }, {table});
  EXPECT_TRUE(r.ok) << r.report;
}

TEST_F(GptTyingTest, AnOptimizerStepUpdatesOneVariable) {
  models::GPT model(small_gpt());
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})});
  const models::CausalLmBatch batch = some_text();
  model(batch.inputs);
  const Variable table = model.token_embedding().embeddings();
  const Tensor before = ops::multiply(table.value(), ops::scalar_like(table.value(), 1.0));  // a copy
  model.train_on_batch(batch.inputs, batch.labels);

  // Adam keeps two slots per variable: two for the table means one variable, not two.
  int table_slots = 0;
  for (const Variable& v : model.optimizer()->variables()) {
    table_slots += v.name().find("token_embedding") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(table_slots, 2);
  EXPECT_EQ(model.optimizer()->variables().size(), 2 * model.trainable_weights().size() + 2);  // + iteration, rate
  EXPECT_EQ(model.trainable_weights().size(), 2u + 2 * 16u + 2u);
  // A row that is only ever an output moved: the projection's update reached the shared table.
  EXPECT_GT(max_abs_diff(ops::slice(before, {25, 0}, {1, -1}), ops::slice(table.value(), {25, 0}, {1, -1})), 1e-4);
  EXPECT_TRUE(model.output_embeddings().is_same(table));
}

TEST_F(GptTyingTest, WeightsRoundTripAndTheTieSurvivesLoading) {
  const models::CausalLmBatch batch = some_text();
  models::GPT trained(small_gpt());
  trained.compile({.optimizer = "adam",
                   .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -100})});
  trained.fit(batch.inputs, batch.labels, {.batch_size = 3, .epochs = 2, .verbose = 0});
  const Tensor expected = trained(batch.inputs);

  for (const std::string name : {"gpt.weights.h5", "gpt.h5"}) {
    const std::string path = scratch_file(name);
    trained.save_weights(path);
    models::GPT restored(small_gpt());  // other random initial weights
    restored.build({1, 8});
    EXPECT_GT(max_abs_diff(restored(batch.inputs), expected), 1e-4) << name;
    restored.load_weights(path);
    EXPECT_EQ(max_abs_diff(restored(batch.inputs), expected), 0.0) << name;
    // Still one variable: the loaded table is what the logits are projected with.
    EXPECT_TRUE(restored.output_embeddings().is_same(restored.token_embedding().embeddings())) << name;
    EXPECT_EQ(restored.weights().size(), trained.weights().size()) << name;
    EXPECT_LT(max_abs_diff(restored(batch.inputs), by_hand_logits(restored, batch.inputs)), 1e-6) << name;
    EXPECT_EQ(
        max_abs_diff(restored.token_embedding().embeddings().value(), trained.token_embedding().embeddings().value()),
        0.0)
        << name;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  }
}

}  // namespace
}  // namespace kestrel
