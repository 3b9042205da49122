#include "framework/model/progress_bar.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kestrel {
namespace {

// Drives a bar the way fit does, with the clock set before each hook.
struct Harness {
  std::ostringstream out;
  double time = 0.0;
  ProgressBar bar;

  explicit Harness(ProgressBarOptions options)
      : bar([&] {
          options.out = &out;
          options.clock = [this] { return time; };
          return options;
        }()) {}
  void at(double t) { time = t; }
};

const Logs kBatch1{{"loss", 0.9}, {"accuracy", 0.5}};
const Logs kBatch3{{"loss", 0.6}, {"accuracy", 0.7}};
const Logs kEpoch{{"loss", 0.5}, {"accuracy", 0.75}, {"val_loss", 0.6}, {"val_accuracy", 0.7}};

// One epoch of four steps: slow first step (t=30), a batch inside the redraw interval, a fast
// third step, and the epoch end with validation logs.
void run_epoch(Harness& h) {
  h.bar.on_train_begin({});
  h.at(0.0);
  h.bar.on_epoch_begin(0, {});
  h.at(30.0);
  h.bar.on_train_batch_end(0, kBatch1);
  h.at(30.01);
  h.bar.on_train_batch_end(1, kBatch1);
  h.at(31.0);
  h.bar.on_train_batch_end(2, kBatch3);
  h.at(31.6);
  h.bar.on_epoch_end(0, kEpoch);
}

TEST(ProgressBar, TerminalRedrawsOneLineThenEndsIt) {
  Harness h({.verbose = 1, .epochs = 2, .steps = 4, .terminal = true});
  run_epoch(h);
  const std::string expected =
      "Epoch 1/2\n"
      "\r1/4 [======>.......................] - ETA: 1:30 - loss: 0.9000 - accuracy: 0.5000"
      // step 3 of 4 at 0.5 s/step (the first step is left out of the estimate); two spaces cover
      // the longer ETA of the line before.
      "\r3/4 [=====================>........] - ETA: 0s - loss: 0.6000 - accuracy: 0.7000  "
      "\r4/4 [==============================] - 32s 533ms/step - loss: 0.5000 - accuracy: 0.7500"
      " - val_loss: 0.6000 - val_accuracy: 0.7000\n";
  EXPECT_EQ(h.out.str(), expected);
}

TEST(ProgressBar, NotATerminalWritesOneLinePerEpoch) {
  Harness h({.verbose = 1, .epochs = 2, .steps = 4, .terminal = false});
  run_epoch(h);
  EXPECT_EQ(h.out.str(),
            "Epoch 1/2\n"
            "4/4 [==============================] - 32s 533ms/step - loss: 0.5000 - accuracy: 0.7500"
            " - val_loss: 0.6000 - val_accuracy: 0.7000\n");
}

TEST(ProgressBar, VerboseTwoWritesTheShortEpochLine) {
  Harness h({.verbose = 2, .epochs = 2, .steps = 4, .terminal = true});
  run_epoch(h);
  EXPECT_EQ(h.out.str(),
            "Epoch 1/2\n"
            "4/4 - 32s - loss: 0.5000 - accuracy: 0.7500 - val_loss: 0.6000 - val_accuracy: 0.7000"
            " - 32s/epoch - 8s/step\n");
}

TEST(ProgressBar, VerboseZeroIsSilent) {
  Harness h({.verbose = 0, .epochs = 2, .steps = 4, .terminal = true});
  run_epoch(h);
  EXPECT_EQ(h.out.str(), "");
}

TEST(ProgressBar, OneEpochHasNoEpochLine) {
  Harness h({.verbose = 1, .epochs = 1, .steps = 4, .terminal = false});
  run_epoch(h);
  EXPECT_EQ(h.out.str().rfind("4/4 [", 0), 0u) << h.out.str();
}

TEST(ProgressBar, ValidationInsideFitIsSilentButEvaluateShows) {
  Harness h({.verbose = 1, .steps = 2, .terminal = false});
  h.bar.on_train_begin({});
  h.bar.on_test_begin({});
  h.bar.on_test_batch_end(0, {{"loss", 1.0}});
  h.bar.on_test_end({{"loss", 1.0}});
  EXPECT_EQ(h.out.str(), "");
  h.bar.on_train_end({});

  h.at(0.0);
  h.bar.on_test_begin({});
  h.at(0.002);
  h.bar.on_test_batch_end(0, {{"loss", 0.25}});
  h.at(0.004);
  h.bar.on_test_end({{"loss", 0.25}, {"accuracy", 0.9}});
  EXPECT_EQ(h.out.str(), "2/2 [==============================] - 0s 2ms/step - loss: 0.2500 - accuracy: 0.9000\n");
}

TEST(ProgressBar, UnknownLengthCountsThenFinishesAtTheCountSeen) {
  Harness h({.verbose = 1, .steps = 0, .terminal = true});
  h.at(0.0);
  h.bar.on_predict_begin({});
  h.at(1.0);
  h.bar.on_predict_batch_end(0, {});
  h.at(2.0);
  h.bar.on_predict_batch_end(1, {});
  h.at(3.0);
  h.bar.on_predict_end({});
  EXPECT_EQ(h.out.str(),
            "\r      1/Unknown - 1s 1s/step"
            "\r      2/Unknown - 2s 1s/step"
            "\r2/2 [==============================] - 3s 2s/step\n");
}

TEST(ProgressBar, SmallValuesUseExponentsAndLongEtasUseHours) {
  Harness h({.verbose = 1, .steps = 10000, .terminal = true});
  h.at(0.0);
  h.bar.on_epoch_begin(0, {});
  h.at(2.0);
  h.bar.on_train_batch_end(0, {{"loss", 0.0001}, {"mae", -0.5}});
  EXPECT_EQ(h.out.str(),
            "\r    1/10000 [..............................] - ETA: 5:33:18 - loss: 1.0000e-04 - mae: -0.5000");
}

}  // namespace
}  // namespace kestrel
