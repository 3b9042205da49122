// find_weight_ties and restore_weight_ties: which slots share a variable, and making them share it again.
#include "framework/layers/weight_ties.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "tests/framework/layers/tied_model_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::TiedPair;

class WeightTiesTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_session(); }
  Tensor x_ = Tensor::ones({2, 4});
};

TEST_F(WeightTiesTest, FindsSlotsThatHoldOneVariable) {
  TiedPair untied(/*tie=*/false);
  untied(x_);
  EXPECT_TRUE(layers::find_weight_ties(untied).empty());

  TiedPair model;
  model(x_);  // built, then tie_weights()
  ASSERT_TRUE(model.tied());
  const layers::WeightTies ties = layers::find_weight_ties(model);
  ASSERT_EQ(ties.size(), 1u);
  EXPECT_EQ(ties[0].slots, (std::vector<std::string>{"encoder/kernel", "decoder/kernel"}));
  EXPECT_EQ(ties[0].to_string(), "encoder/kernel = decoder/kernel");
  EXPECT_EQ(model.weights().size(), 3u);  // the tied kernel once, two biases
}

TEST_F(WeightTiesTest, RestoresATieThatCameApart) {
  TiedPair model(/*tie=*/false);
  model(x_);
  model.decoder().kernel().tie_to(model.encoder().kernel());
  const layers::WeightTies ties = layers::find_weight_ties(model);
  model.decoder().recreate_kernel();
  ASSERT_FALSE(model.tied());

  const std::vector<std::string> retied = layers::restore_weight_ties(model, ties, "a test");
  EXPECT_EQ(retied, (std::vector<std::string>{"decoder/kernel to encoder/kernel"}));
  EXPECT_TRUE(model.tied());
  EXPECT_TRUE(layers::restore_weight_ties(model, ties, "a test").empty());  // nothing left to do
}

TEST_F(WeightTiesTest, ATieThatCannotComeBackFailsLoudly) {
  TiedPair model(/*tie=*/false);
  model(x_);
  model.decoder().kernel().tie_to(model.encoder().kernel());
  const layers::WeightTies ties = layers::find_weight_ties(model);
  model.decoder().recreate_kernel(Shape{4, 5});
  std::string m = error_message<ValueError>([&] { layers::restore_weight_ties(model, ties, "placement on a test"); });
  EXPECT_TRUE(contains(m, "the tied weights encoder/kernel = decoder/kernel came apart at placement on a test")) << m;
  EXPECT_TRUE(contains(m, "tie_weights()")) << m;
  EXPECT_FALSE(model.tied());

  layers::WeightTies gone = {{.slots = {"encoder/kernel", "decoder/missing"}}};
  m = error_message<ValueError>([&] { layers::restore_weight_ties(model, gone, "a test"); });
  EXPECT_TRUE(contains(m, "slot 'decoder/missing' no longer exists")) << m;
}

}  // namespace
}  // namespace kestrel
