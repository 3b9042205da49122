// BertClassifier trains: gradients reach every weight, fit learns a token-detection task, and
// weights survive a save/load round trip in both Keras layouts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"
#include "tests/models/bert_test_util.h"
#include "tests/models/scratch_file.h"

namespace kestrel {
namespace {

using testing::max_abs_diff;
using testing::padded;
using testing::scratch_file;
using testing::small_bert;

class BertTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(5);
  }
};

// Is token 5 in the sequence? Rows are [CLS]=1, 2..10 ids from [6, 32), maybe one 5, [SEP]=2,
// padded with 0 to 12; about half contain the 5. Labels are int64 [n].
struct TokenTask {
  Inputs x;
  Tensor y;
};
TokenTask token_task(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<std::vector<std::int64_t>> rows;
  std::vector<std::int64_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    const int words = std::uniform_int_distribution<int>(2, 10)(gen);
    std::vector<std::int64_t> row{1};
    for (int w = 0; w < words; ++w) row.push_back(std::uniform_int_distribution<std::int64_t>(6, 31)(gen));
    const bool has_five = (gen() & 1u) != 0;
    if (has_five) row[static_cast<std::size_t>(std::uniform_int_distribution<int>(1, words)(gen))] = 5;
    row.push_back(2);
    rows.push_back(row);
    labels.push_back(has_five ? 1 : 0);
  }
  return {padded(rows, 12), Tensor::from_vector<std::int64_t>(labels, {n})};
}

TEST_F(BertTrainingTest, GradientsReachEveryWeight) {
  models::BertOptions o = small_bert();
  o.type_vocab_size = 2;
  models::BertClassifier model(o);
  Inputs in = padded({{1, 7, 9, 2, 11}, {1, 4, 3}}, 6);
  Tensor types = Tensor::from_vector<std::int64_t>({0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0}, {2, 6});
  Inputs with_types{
      {"input_ids", in["input_ids"]}, {"attention_mask", in["attention_mask"]}, {"token_type_ids", types}};
  model.build({2, 6});
  std::vector<Variable> weights = model.trainable_weights();
  std::vector<Tensor> sources;
  for (const Variable& w : weights) sources.push_back(w.value());
  GradientTape tape;
  Tensor logits = model(with_types, /*training=*/true);
  Tensor loss = ops::sum(ops::multiply(logits, random::normal(logits.shape(), random::Key(9))));
  std::vector<Tensor> grads = tape.gradient(loss, sources);
  ASSERT_EQ(grads.size(), weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    // A key bias adds the same amount to every score of a query, which softmax cancels: its
    // gradient is zero in exact arithmetic, in every BERT.
    if (weights[i].name().ends_with("/key/bias")) continue;
    double largest = 0.0;
    for (float g : grads[i].to_vector<float>()) largest = std::max(largest, static_cast<double>(std::abs(g)));
    EXPECT_GT(largest, 1e-7) << weights[i].name() << " gets no gradient";
  }
}

TEST_F(BertTrainingTest, FitLearnsWhetherATokenAppears) {
  const auto start = std::chrono::steady_clock::now();
  TokenTask train = token_task(512, 1);
  TokenTask test = token_task(256, 2);
  models::BertOptions o = small_bert();
  o.num_classes = 2;
  o.dropout = 0.1;
  models::BertClassifier model(o);
  model.compile({.optimizer = optimizers::AdamW({.learning_rate = 3e-3, .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  History history = model.fit(train.x, train.y, {.batch_size = 32, .epochs = 8, .verbose = 0});
  const double accuracy = model.evaluate(test.x, test.y, {.verbose = 0}).at("accuracy");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("test_accuracy", std::to_string(accuracy));
  std::cout << "token task: final train loss " << history.history.at("loss").back() << ", test accuracy " << accuracy
            << " in " << seconds << " s\n";
  EXPECT_GE(accuracy, 0.95);
  EXPECT_LT(history.history.at("loss").back(), history.history.at("loss").front());
}

TEST_F(BertTrainingTest, WeightsRoundTripThroughBothKerasLayouts) {
  models::BertOptions o = small_bert();
  o.type_vocab_size = 2;
  TokenTask data = token_task(64, 3);
  models::BertClassifier trained(o);
  trained.compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  trained.fit(data.x, data.y, {.batch_size = 32, .epochs = 1, .verbose = 0});
  const Tensor expected = trained(data.x);

  for (const std::string name : {"bert.weights.h5", "bert.h5"}) {
    const std::string path = scratch_file(name);
    trained.save_weights(path);
    models::BertClassifier restored(o);  // other random initial weights
    restored.build({1, 12});
    EXPECT_GT(max_abs_diff(restored(data.x), expected), 1e-4) << name;
    restored.load_weights(path);
    EXPECT_EQ(max_abs_diff(restored(data.x), expected), 0.0) << name;
    std::vector<Tensor> a = trained.get_weights();
    std::vector<Tensor> b = restored.get_weights();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(max_abs_diff(a[i], b[i]), 0.0) << name << " weight " << i;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  }
}

TEST_F(BertTrainingTest, LoadingIntoADifferentConfigurationFails) {
  models::BertClassifier small(small_bert());
  small.build({1, 4});
  const std::string path = scratch_file("small.weights.h5");
  small.save_weights(path);
  models::BertOptions wider = small_bert();
  wider.intermediate_size = 64;
  models::BertClassifier other(wider);
  other.build({1, 4});
  EXPECT_THROW(other.load_weights(path), ShapeError);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace
}  // namespace kestrel
