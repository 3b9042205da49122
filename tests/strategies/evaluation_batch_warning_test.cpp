// Compiled replicas evaluating at a global batch other than training's run a second program with
// memory of its own on every replica: one warning says so, with both programs' planned memory per
// replica and the fix (evaluate at the training batch size, as the TPU guides advise).
#include <gtest/gtest.h>

#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::count_of;
using testing::LogCapture;

TEST(EvaluationBatchWarning, EvaluatingAtAnotherGlobalBatchWarnsOnceWithBothPrograms) {
  clear_session();
  random::set_global_seed(5);
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  model.compile(
      {.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}), .jit_compile = true});
  const Tensor x = random::normal({64, 12}, random::Key(1));
  const Tensor y = random::randint({64}, random::Key(2), 0, 3);
  LogCapture log("kestrel.distribute");
  // Validation at the training batch: no warning.
  model.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .validation_data = ValidationData{x, y}});
  EXPECT_EQ(count_of(log.text(), "evaluation runs at a global batch"), 0u) << log.text();
  model.evaluate(x, y, {.batch_size = 32, .verbose = 0});
  model.evaluate(x, y, {.batch_size = 32, .verbose = 0});
  const std::string text = log.text();
  EXPECT_EQ(count_of(text,
                     "evaluation runs at a global batch of 32 rows but training ran at 16 on the 8 replicas of "
                     "TPUStrategy"),
            1u)
      << text;
  EXPECT_NE(text.find("train_step "), std::string::npos) << text;
  EXPECT_NE(text.find("planned per replica"), std::string::npos) << text;
  EXPECT_NE(text.find("fit's validation_batch_size = 16"), std::string::npos) << text;
}

}  // namespace
}  // namespace kestrel::distribute
