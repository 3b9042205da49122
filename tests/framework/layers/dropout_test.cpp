#include "framework/layers/dropout.h"

#include <gtest/gtest.h>

#include <thread>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/training_step.h"
#include "framework/ops/nn.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

std::vector<float> run(layers::Dropout& drop, const Tensor& x, std::int64_t step) {
  layers::TrainingStepScope scope(step);
  return drop(x, /*training=*/true).to_vector<float>();
}

TEST(Dropout, IdentityWhenNotTrainingOrRateZero) {
  Tensor x = Tensor::ones({4, 8});
  layers::Dropout drop(0.5);
  EXPECT_TRUE(drop(x).is_same(x));
  EXPECT_TRUE(drop(x, /*training=*/false).is_same(x));
  layers::Dropout none(0.0);
  EXPECT_TRUE(none(x, /*training=*/true).is_same(x));
}

TEST(Dropout, DropsAboutRateAndScalesTheRest) {
  layers::Dropout drop(0.25);
  std::vector<float> y = run(drop, Tensor::ones({100, 100}), 0);
  int zeros = 0;
  for (float v : y) {
    if (v == 0.0f) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(v, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros / 10000.0, 0.25, 0.02);
}

TEST(Dropout, MaskIsAFunctionOfStepAndCallIndex) {
  layers::Dropout drop(0.5);
  Tensor x = Tensor::ones({64});
  std::vector<float> first, second;
  {
    layers::TrainingStepScope step(5);
    first = drop(x, true).to_vector<float>();
    second = drop(x, true).to_vector<float>();  // second call in step 5
  }
  EXPECT_NE(first, second);

  // A resumed run sets the same step and draws the same masks in the same order.
  {
    layers::TrainingStepScope step(5);
    EXPECT_EQ(drop(x, true).to_vector<float>(), first);
    EXPECT_EQ(drop(x, true).to_vector<float>(), second);
  }

  EXPECT_NE(run(drop, x, 6), first);
}

TEST(Dropout, SeedFixesTheMasksAcrossLayers) {
  layers::Dropout a(0.5, {.seed = 42});
  layers::Dropout b(0.5, {.seed = 42});
  layers::Dropout c(0.5, {.seed = 43});
  Tensor x = Tensor::ones({64});
  EXPECT_EQ(run(a, x, 3), run(b, x, 3));
  EXPECT_NE(run(a, x, 3), run(c, x, 3));
  // Unseeded layers take distinct keys from the global stream.
  layers::Dropout d(0.5), e(0.5);
  EXPECT_NE(run(d, x, 3), run(e, x, 3));
}

TEST(Dropout, MaskKeyIsTheSeedFoldedWithStepAndCallIndex) {
  layers::Dropout drop(0.5, {.seed = 9});
  Tensor x = Tensor::ones({256});
  const Tensor want_first = ops::dropout(x, 0.5, random::key_tensor(random::Key(9).fold_in(4).fold_in(0)));
  const Tensor want_second = ops::dropout(x, 0.5, random::key_tensor(random::Key(9).fold_in(4).fold_in(1)));
  layers::TrainingStepScope step(4);
  EXPECT_EQ(drop(x, true).to_vector<float>(), want_first.to_vector<float>());
  EXPECT_EQ(drop(x, true).to_vector<float>(), want_second.to_vector<float>());
}

TEST(Dropout, TrainingStepIsPerThreadAndScoped) {
  EXPECT_EQ(layers::training_step().item(), 0);
  {
    layers::TrainingStepScope outer(7);
    std::int64_t other = -1;
    std::thread t([&] { other = static_cast<std::int64_t>(layers::training_step().item()); });
    t.join();
    EXPECT_EQ(other, 0);
    EXPECT_EQ(layers::training_step().item(), 7);
    {
      layers::TrainingStepScope inner(8);
      EXPECT_EQ(layers::training_step().item(), 8);
    }
    EXPECT_EQ(layers::training_step().item(), 7);
  }
  EXPECT_EQ(layers::training_step().item(), 0);
}

TEST(Dropout, TrainingStepMustBeAnInt64Scalar) {
  std::string m = error_message<TypeError>([] { layers::TrainingStepScope bad(Tensor::scalar(1.0)); });
  EXPECT_TRUE(contains(m, "int64 scalar")) << m;
  EXPECT_EQ(layers::training_step().item(), 0);  // a rejected scope leaves the step as it was
}

TEST(Dropout, GradientFollowsTheMask) {
  layers::Dropout drop(0.3, {.seed = 1});
  Tensor x = random::normal({3, 5}, random::Key(2));
  auto f = [&](const std::vector<Tensor>& a) {
    layers::TrainingStepScope step(11);  // every evaluation draws the same mask
    return drop(a[0], true);
  };
  GradcheckResult r = gradcheck(f, {x});
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(Dropout, RateOutsideTheRangeNamesTheLayer) {
  clear_session();
  std::string m = error_message<ValueError>([] { layers::Dropout(1.0); });
  EXPECT_TRUE(contains(m, "layer 'dropout' (Dropout)")) << m;
  EXPECT_TRUE(contains(m, "[0, 1)")) << m;
  EXPECT_THROW(layers::Dropout(-0.1), ValueError);
}

}  // namespace
}  // namespace kestrel
