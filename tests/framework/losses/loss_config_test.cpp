// Losses as Keras 3 configs: the keys Keras writes, every class read back with the same options
// (the same JSON and the same loss values), bare names and Keras's function objects, and the
// errors for what Kestrel cannot read.
#include "framework/losses/serialization.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/losses/losses.h"
#include "tests/support/error_message.h"
#include "tests/support/tensor_values.h"

namespace kestrel::losses {
namespace {

using nlohmann::json;
using testing::contains;
using testing::error_message;
using testing::floats;
using testing::int64s;

// serialize -> deserialize gives the same class, the same config and the same loss, bit for bit.
template <class T>
void expect_round_trip(const T& original, const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  const json object = serialize(original);
  const std::shared_ptr<Loss> copy = deserialize(json::parse(object.dump()));
  ASSERT_NE(dynamic_cast<T*>(copy.get()), nullptr) << object.dump();
  const Loss& rebuilt = *copy;
  EXPECT_EQ(typeid(rebuilt), typeid(T));
  EXPECT_EQ(serialize(*copy), object);
  EXPECT_EQ(copy->name(), original.name());
  EXPECT_EQ(copy->reduction(), original.reduction());
  const Tensor want = original(y_true, y_pred, sample_weight);
  EXPECT_EQ((*copy)(y_true, y_pred, sample_weight).to_vector<float>(), want.to_vector<float>()) << object.dump();
}

TEST(LossConfig, SparseCategoricalCrossentropyWritesKerasKeys) {
  const SparseCategoricalCrossentropy loss({.from_logits = true, .ignore_class = -1});
  EXPECT_EQ(serialize(loss), json::parse(R"({
    "module": "keras.losses", "class_name": "SparseCategoricalCrossentropy", "registered_name": null,
    "config": {"name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size",
               "from_logits": true, "ignore_class": -1, "axis": -1}})"));
}

TEST(LossConfig, CrossentropiesAndRegressionLossesWriteKerasKeys) {
  EXPECT_EQ(
      BinaryCrossentropy({.label_smoothing = 0.25, .reduction = Reduction::sum, .name = "bce_smooth"}).get_config(),
      json::parse(R"({"name": "bce_smooth", "reduction": "sum", "from_logits": false,
                            "label_smoothing": 0.25, "axis": -1})"));
  EXPECT_EQ(serialize(CategoricalCrossentropy({.from_logits = true, .axis = 1, .reduction = Reduction::none})),
            json::parse(R"({"module": "keras.losses", "class_name": "CategoricalCrossentropy", "registered_name": null,
                            "config": {"name": "categorical_crossentropy", "reduction": "none", "from_logits": true,
                                       "label_smoothing": 0.0, "axis": 1}})"));
  EXPECT_EQ(serialize(MeanSquaredError()),
            json::parse(R"({"module": "keras.losses", "class_name": "MeanSquaredError", "registered_name": null,
                            "config": {"name": "mean_squared_error", "reduction": "sum_over_batch_size"}})"));
  EXPECT_EQ(MeanAbsoluteError({.reduction = Reduction::sum}).get_config(),
            json::parse(R"({"name": "mean_absolute_error", "reduction": "sum"})"));
}

TEST(LossConfig, SparseCategoricalCrossentropyRoundTrips) {
  const Tensor labels = int64s({2, 0, 7, 1}, {4});  // 7 is the ignored class
  const Tensor logits = floats({0.1f, 0.4f, 2.0f, 1.5f, -0.3f, 0.2f, 9.0f, 9.0f, 9.0f, 0.0f, 3.0f, -1.0f}, {4, 3});
  const SparseCategoricalCrossentropy loss(
      {.from_logits = true, .ignore_class = 7, .reduction = Reduction::sum, .name = "token_loss"});
  expect_round_trip(loss, labels, logits, floats({1.0f, 0.5f, 1.0f, 2.0f}, {4}));
  // The ignored class came back: its logits would otherwise add to the sum.
  const Tensor without_ignored = SparseCategoricalCrossentropy({.from_logits = true, .reduction = Reduction::sum})(
      int64s({2, 0, 1}, {3}), floats({0.1f, 0.4f, 2.0f, 1.5f, -0.3f, 0.2f, 0.0f, 3.0f, -1.0f}, {3, 3}),
      floats({1.0f, 0.5f, 2.0f}, {3}));
  EXPECT_NEAR((*deserialize(serialize(loss)))(labels, logits, floats({1.0f, 0.5f, 1.0f, 2.0f}, {4})).item(),
              without_ignored.item(), 1e-6);
}

TEST(LossConfig, CategoricalCrossentropyRoundTrips) {
  expect_round_trip(
      CategoricalCrossentropy(
          {.from_logits = true, .label_smoothing = 0.2, .reduction = Reduction::none, .name = "smoothed"}),
      floats({0, 1, 0, 1, 0, 0}, {2, 3}), floats({0.5f, 2.0f, -1.0f, 0.3f, 0.3f, 1.0f}, {2, 3}), Tensor());
}

TEST(LossConfig, BinaryCrossentropyRoundTrips) {
  expect_round_trip(BinaryCrossentropy({.label_smoothing = 0.1, .reduction = Reduction::sum}),
                    floats({1, 0, 1, 1}, {4, 1}), floats({0.9f, 0.2f, 0.6f, 0.35f}, {4, 1}),
                    floats({1.0f, 2.0f, 1.0f, 0.5f}, {4}));
}

TEST(LossConfig, RegressionLossesRoundTrip) {
  const Tensor targets = floats({1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 4.0f}, {3, 2});
  const Tensor predictions = floats({1.5f, 1.0f, 2.0f, 0.0f, 0.5f, 2.5f}, {3, 2});
  expect_round_trip(MeanSquaredError({.reduction = Reduction::sum, .name = "sse"}), targets, predictions, Tensor());
  expect_round_trip(MeanAbsoluteError({.reduction = Reduction::none, .name = "per_sample"}), targets, predictions,
                    floats({1.0f, 0.0f, 3.0f}, {3}));
}

// Every loss losses::get knows can be written and read back.
TEST(LossConfig, EveryLossGetKnowsRoundTrips) {
  for (const std::string& name : names()) {
    const Handle<Loss> loss = get(name);
    const json object = serialize(*loss);
    EXPECT_EQ(object.at("config").at("name"), name);
    EXPECT_EQ(serialize(*deserialize(object)), object);
  }
}

TEST(LossConfig, ReadsAConfigKerasWrote) {
  // keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0, reduction=None)
  const std::shared_ptr<Loss> loss = deserialize(json::parse(R"({
    "module": "keras.losses", "class_name": "SparseCategoricalCrossentropy", "registered_name": null,
    "config": {"name": "sparse_categorical_crossentropy", "reduction": null, "from_logits": true,
               "ignore_class": 0, "axis": -1}})"));
  const auto& scce = dynamic_cast<const SparseCategoricalCrossentropy&>(*loss);
  EXPECT_TRUE(scce.options().from_logits);
  EXPECT_EQ(scce.options().ignore_class.value(), 0);
  EXPECT_EQ(scce.reduction(), Reduction::none);  // Keras's None
  // "mean" is Keras's other name for sum_over_batch_size; absent keys take Keras's defaults.
  const std::shared_ptr<Loss> mean =
      deserialize(json::parse(R"({"class_name": "BinaryCrossentropy", "config": {"reduction": "mean"}})"));
  EXPECT_EQ(mean->reduction(), Reduction::sum_over_batch_size);
  EXPECT_EQ(mean->name(), "binary_crossentropy");
  EXPECT_EQ(dynamic_cast<const BinaryCrossentropy&>(*mean).options().label_smoothing, 0.0);
}

TEST(LossConfig, BareNamesAndFunctionObjects) {
  const std::shared_ptr<Loss> mse = deserialize("mse");
  ASSERT_NE(dynamic_cast<MeanSquaredError*>(mse.get()), nullptr);
  EXPECT_EQ(mse->name(), "mean_squared_error");
  EXPECT_NE(dynamic_cast<SparseCategoricalCrossentropy*>(deserialize("sparse_categorical_crossentropy").get()),
            nullptr);
  EXPECT_NE(dynamic_cast<CategoricalCrossentropy*>(deserialize("CategoricalCrossentropy").get()), nullptr);
  // Keras writes keras.losses.mean_absolute_error, a function, this way.
  const std::shared_ptr<Loss> mae = deserialize(json::parse(R"({"module": "keras.losses", "class_name": "function",
      "config": "mean_absolute_error", "registered_name": "mean_absolute_error"})"));
  ASSERT_NE(dynamic_cast<MeanAbsoluteError*>(mae.get()), nullptr);
  // Keras also finds a function by its name in class_name.
  EXPECT_NE(dynamic_cast<BinaryCrossentropy*>(deserialize(json::parse(R"({"class_name": "bce"})")).get()), nullptr);
}

TEST(LossConfigErrors, ReductionKestrelLacksIsNamed) {
  const std::string m = error_message<ValueError>([] {
    deserialize(
        json::parse(R"({"class_name": "MeanSquaredError", "config": {"reduction": "mean_with_sample_weight"}})"));
  });
  EXPECT_TRUE(contains(m, "loss class 'MeanSquaredError'")) << m;
  EXPECT_TRUE(contains(m, "mean_with_sample_weight")) << m;
  const std::string bad = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "MeanAbsoluteError", "config": {"reduction": "average"}})")); });
  EXPECT_TRUE(contains(bad, "loss class 'MeanAbsoluteError'")) << bad;
  EXPECT_TRUE(contains(bad, "reduction is \"average\"")) << bad;
}

TEST(LossConfigErrors, UnknownKeyIsNotDropped) {
  const std::string m = error_message<ValueError>([] {
    deserialize(json::parse(
        R"({"class_name": "CategoricalCrossentropy", "config": {"from_logits": true, "dtype": "float16"}})"));
  });
  EXPECT_TRUE(contains(m, "loss class 'CategoricalCrossentropy'")) << m;
  EXPECT_TRUE(contains(m, "'dtype' (\"float16\")")) << m;
  EXPECT_TRUE(contains(m, "label_smoothing")) << m;  // the keys it does read
}

TEST(LossConfigErrors, WrongTypeAndOutOfRangeValues) {
  const std::string type = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "BinaryCrossentropy", "config": {"from_logits": "yes"}})")); });
  EXPECT_TRUE(contains(type, "loss class 'BinaryCrossentropy'")) << type;
  EXPECT_TRUE(contains(type, "'from_logits'")) << type;
  const std::string range = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "BinaryCrossentropy", "config": {"label_smoothing": 2.0}})")); });
  EXPECT_TRUE(contains(range, "label_smoothing is 2")) << range;
}

TEST(LossConfigErrors, UnknownClassListsKestrels) {
  const std::string m = error_message<ValueError>([] { deserialize(json::parse(R"({"class_name": "Huber"})")); });
  EXPECT_TRUE(contains(m, "[losses::deserialize]")) << m;
  EXPECT_TRUE(contains(m, "unknown loss class 'Huber'")) << m;
  EXPECT_TRUE(contains(m, "SparseCategoricalCrossentropy, CategoricalCrossentropy")) << m;
  const std::string bare = error_message<ValueError>([] { deserialize("hinge"); });
  EXPECT_TRUE(contains(bare, "[losses::get]")) << bare;
  EXPECT_TRUE(contains(bare, "'hinge'")) << bare;
}

// A registered class of the user's own only shares the built-in one's name.
TEST(LossConfigErrors, UsersRegisteredClassIsNotTheBuiltInOne) {
  const std::string m = error_message<ValueError>([] {
    deserialize(json::parse(
        R"({"module": "my_pkg", "class_name": "MeanSquaredError", "registered_name": "my_pkg>MeanSquaredError"})"));
  });
  EXPECT_TRUE(contains(m, "[losses::deserialize]")) << m;
  EXPECT_TRUE(contains(m, "'MeanSquaredError' is registered as 'my_pkg>MeanSquaredError'")) << m;
}

// A loss of one's own: the mean of the predictions.
class PredictionMean : public Loss {
 public:
  PredictionMean() : Loss("prediction_mean", Reduction::sum_over_batch_size) {}
  Tensor call(const Tensor& /*y_true*/, const Tensor& y_pred) const override { return y_pred; }
};

TEST(LossConfigErrors, ClassesOfOnesOwnHaveNoKerasConfig) {
  const std::string m = error_message<ValueError>([] { serialize(PredictionMean()); });
  EXPECT_TRUE(contains(m, "[losses::serialize]")) << m;
  EXPECT_TRUE(contains(m, "loss 'prediction_mean'")) << m;
  EXPECT_TRUE(contains(m, "of a class of its own")) << m;
}

}  // namespace
}  // namespace kestrel::losses
