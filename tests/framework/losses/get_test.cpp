// losses::get: Keras's names and aliases, and the error for anything else.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/losses/losses.h"
#include "tests/support/error_message.h"

namespace kestrel::losses {
namespace {

using testing::contains;
using testing::error_message;

template <class L>
void expect_loss(const std::string& spelling, const std::string& canonical) {
  Handle<Loss> loss = get(spelling);
  ASSERT_TRUE(loss) << spelling;
  EXPECT_NE(dynamic_cast<L*>(loss.get()), nullptr) << spelling;
  EXPECT_EQ(loss->name(), canonical) << spelling;
  EXPECT_EQ(loss->reduction(), Reduction::sum_over_batch_size) << spelling;
}

TEST(LossesGet, KerasNamesAndAliases) {
  expect_loss<SparseCategoricalCrossentropy>("sparse_categorical_crossentropy", "sparse_categorical_crossentropy");
  expect_loss<SparseCategoricalCrossentropy>("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy");
  expect_loss<CategoricalCrossentropy>("categorical_crossentropy", "categorical_crossentropy");
  expect_loss<BinaryCrossentropy>("binary_crossentropy", "binary_crossentropy");
  expect_loss<BinaryCrossentropy>("bce", "binary_crossentropy");
  expect_loss<MeanSquaredError>("mean_squared_error", "mean_squared_error");
  expect_loss<MeanSquaredError>("mse", "mean_squared_error");
  expect_loss<MeanSquaredError>("MSE", "mean_squared_error");
  expect_loss<MeanAbsoluteError>("mean_absolute_error", "mean_absolute_error");
  expect_loss<MeanAbsoluteError>("mae", "mean_absolute_error");
}

TEST(LossesGet, ByNameTheDefaultsAreKeras) {
  // The handle is kept: a pointer into a temporary handle would dangle by the next line.
  const Handle<Loss> loss = get("sparse_categorical_crossentropy");
  auto* scce = dynamic_cast<SparseCategoricalCrossentropy*>(loss.get());
  ASSERT_NE(scce, nullptr);
  EXPECT_FALSE(scce->options().from_logits);
}

TEST(LossesGet, NamesListsEveryLossOnceByItsCanonicalName) {
  const std::vector<std::string> all = names();
  EXPECT_EQ(all, (std::vector<std::string>{"sparse_categorical_crossentropy", "categorical_crossentropy",
                                           "binary_crossentropy", "mean_squared_error", "mean_absolute_error"}));
  for (const std::string& name : all) EXPECT_EQ(get(name)->name(), name);
}

TEST(LossesGet, UnknownNameListsTheKnownOnes) {
  std::string m = error_message<ValueError>([] { get("hinge_loss"); });
  EXPECT_TRUE(contains(m, "[losses::get]")) << m;
  EXPECT_TRUE(contains(m, "'hinge_loss'")) << m;
  EXPECT_TRUE(contains(m, "sparse_categorical_crossentropy")) << m;
  EXPECT_TRUE(contains(m, "mean_absolute_error")) << m;
}

}  // namespace
}  // namespace kestrel::losses
