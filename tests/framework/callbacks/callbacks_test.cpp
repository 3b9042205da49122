#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "framework/callbacks/callbacks.h"
#include "framework/callbacks/python_format.h"
#include "framework/core/error.h"
#include "framework/layers/dense.h"
#include "framework/logging/logging.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/sgd.h"
#include "framework/saving/model_file.h"
#include "tests/framework/callbacks/test_support.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::callbacks {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::read_file;
using kestrel::testing::ScratchDir;
using LogCapture = kestrel::testing::LogCapture;
using kestrel::testing::compile_sgd;
using kestrel::testing::TinyModel;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Callback, ModelThrowsUntilSet) {
  TerminateOnNaN cb;
  EXPECT_TRUE(contains(error_message<ValueError>([&] { cb.model(); }), "set_model"));
  TinyModel model;
  cb.set_model(&model);
  EXPECT_EQ(&cb.model(), &model);
}

TEST(Callback, EveryCallbackGoesIntoACallbackList) {
  // fit takes callbacks by value into handles, so each must be copyable and movable.
  const std::vector<Handle<Callback>> list{EarlyStopping(),
                                           ReduceLROnPlateau(),
                                           ModelCheckpoint("m.weights.h5"),
                                           TensorBoard(),
                                           CSVLogger("log.csv"),
                                           TerminateOnNaN(),
                                           LearningRateScheduler([](int) { return 0.1; }),
                                           LambdaCallback({}),
                                           HistoryCallback()};
  const TensorBoard board;
  const std::vector<Handle<Callback>> copied{board, board};
  EXPECT_EQ(list.size(), 9u);
  EXPECT_NE(copied[0].get(), copied[1].get());
}

// ---- EarlyStopping ----

// Runs epochs with these monitored values; returns the epoch after which stop_training was set
// (or -1). Each epoch first sets the model's weight to the epoch index.
int run_early_stopping(EarlyStopping& es, TinyModel& model, const std::vector<double>& values,
                       const std::string& key = "val_loss") {
  es.set_model(&model);
  model.stop_training = false;
  es.on_train_begin({});
  for (std::size_t e = 0; e < values.size(); ++e) {
    model.set_w(static_cast<float>(e));
    Logs logs{{"loss", 1.0}};
    logs[key] = values[e];
    es.on_epoch_end(static_cast<int>(e), logs);
    if (model.stop_training) {
      es.on_train_end({});
      return static_cast<int>(e);
    }
  }
  es.on_train_end({});
  return -1;
}

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  TinyModel model;
  EarlyStopping es({.patience = 2});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 0.9, 0.95, 0.96, 0.5}), 3);
  EXPECT_EQ(es.stopped_epoch(), 3);
  EXPECT_EQ(es.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(es.best(), 0.9);
}

TEST(EarlyStopping, PatienceZeroStopsAtTheFirstNonImprovementAfterEpochZero) {
  TinyModel model;
  EarlyStopping es({.monitor = "loss"});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 0.8, 0.8}, "loss"), 2);
}

TEST(EarlyStopping, RestoresTheBestWeightsWhenTrainingEnds) {
  TinyModel model;
  EarlyStopping es({.patience = 2, .restore_best_weights = true});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 0.5, 0.7, 0.8}), 3);
  EXPECT_EQ(model.w(), 1.0f);  // the weight set in epoch 1, the best
  TinyModel kept;
  EarlyStopping no_restore({.patience = 2});
  run_early_stopping(no_restore, kept, {1.0, 0.5, 0.7, 0.8});
  EXPECT_EQ(kept.w(), 3.0f);
}

TEST(EarlyStopping, RestoresEvenWhenTrainingWasNotStopped) {
  TinyModel model;
  EarlyStopping es({.patience = 5, .restore_best_weights = true});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 0.2, 0.7}), -1);
  EXPECT_EQ(model.w(), 1.0f);
}

TEST(EarlyStopping, AccuracyIsMaximizedInAutoMode) {
  TinyModel model;
  EarlyStopping es({.monitor = "val_accuracy", .patience = 1});
  EXPECT_EQ(run_early_stopping(es, model, {0.5, 0.6, 0.7, 0.65}, "val_accuracy"), 3);
  EarlyStopping forced_min({.monitor = "val_accuracy", .patience = 1, .mode = "min"});
  EXPECT_EQ(run_early_stopping(forced_min, model, {0.5, 0.6, 0.7}, "val_accuracy"), 1);
}

TEST(EarlyStopping, MinDeltaSetsTheSmallestImprovement) {
  TinyModel model;
  EarlyStopping es({.min_delta = -0.1, .patience = 1});  // the sign is ignored, as in Keras
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 0.95, 0.7}), 1);
}

TEST(EarlyStopping, WaitRestartsOnlyWhenTheBaselineIsBeaten) {
  TinyModel model;
  EarlyStopping es({.patience = 2, .baseline = 0.5});
  // Improving but above the baseline: the wait keeps growing, and the first epoch without any
  // improvement stops training.
  EXPECT_EQ(run_early_stopping(es, model, {0.8, 0.7, 0.6, 0.65}), 3);
  EarlyStopping beaten({.patience = 2, .baseline = 0.5});
  EXPECT_EQ(run_early_stopping(beaten, model, {0.8, 0.4, 0.45, 0.46, 0.47}), 3);
}

TEST(EarlyStopping, IgnoresEpochsBeforeStartFromEpoch) {
  TinyModel model;
  EarlyStopping es({.patience = 0, .start_from_epoch = 3});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 2.0, 3.0, 4.0, 5.0}), 4);
}

TEST(EarlyStopping, WarnsWhenTheMonitoredValueIsMissing) {
  LogCapture log("kestrel.callbacks");
  TinyModel model;
  EarlyStopping es({.monitor = "val_auc"});
  EXPECT_EQ(run_early_stopping(es, model, {1.0, 2.0, 3.0}), -1);
  EXPECT_TRUE(contains(log.text(), "'val_auc', which is not in the logs. Available: loss,val_loss")) << log.text();
}

TEST(EarlyStopping, RejectsUnknownModes) {
  EXPECT_TRUE(contains(error_message<ValueError>([] { EarlyStopping({.mode = "lowest"}); }), "'lowest'"));
}

// ---- ReduceLROnPlateau ----

TEST(ReduceLROnPlateau, ReducesTheOptimizerRateAfterPatienceEpochs) {
  TinyModel model;
  compile_sgd(model, 1.0);
  ReduceLROnPlateau cb({.monitor = "loss", .factor = 0.5, .patience = 2});
  cb.set_model(&model);
  cb.on_train_begin({});
  const std::vector<double> losses{1.0, 1.0, 1.0, 1.0, 1.0, 0.5};
  std::vector<double> rates;
  for (std::size_t e = 0; e < losses.size(); ++e) {
    cb.on_epoch_end(static_cast<int>(e), {{"loss", losses[e]}});
    rates.push_back(model.optimizer()->learning_rate());
  }
  EXPECT_EQ(rates, (std::vector<double>{1.0, 1.0, 0.5, 0.5, 0.25, 0.25}));
}

TEST(ReduceLROnPlateau, CooldownAndMinLr) {
  TinyModel model;
  compile_sgd(model, 1.0);
  ReduceLROnPlateau cb({.monitor = "loss", .factor = 0.1, .patience = 1, .cooldown = 2, .min_lr = 0.05});
  cb.set_model(&model);
  cb.on_train_begin({});
  std::vector<double> rates;
  for (int e = 0; e < 7; ++e) {
    cb.on_epoch_end(e, {{"loss", 1.0}});
    rates.push_back(model.optimizer()->learning_rate());
  }
  // Reduced at epoch 1 and cooling down in epoch 2; as in Keras, the cooldown's last epoch (3)
  // already counts towards patience, so the rate drops again there, to the floor, and stays.
  ASSERT_EQ(rates.size(), 7u);
  EXPECT_EQ(rates[0], 1.0);
  EXPECT_NEAR(rates[1], 0.1, 1e-7);
  EXPECT_NEAR(rates[2], 0.1, 1e-7);
  for (int e = 3; e < 7; ++e) EXPECT_NEAR(rates[e], 0.05, 1e-7) << "epoch " << e;
}

TEST(ReduceLROnPlateau, ImprovementsSmallerThanMinDeltaDoNotCount) {
  TinyModel model;
  compile_sgd(model, 1.0);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 1, .min_delta = 0.1});
  cb.set_model(&model);
  cb.on_train_begin({});
  cb.on_epoch_end(0, {{"val_loss", 1.0}});
  cb.on_epoch_end(1, {{"val_loss", 0.95}});
  EXPECT_EQ(model.optimizer()->learning_rate(), 0.5);
}

TEST(ReduceLROnPlateau, RejectsFactorsOfOneOrMore) {
  EXPECT_TRUE(contains(error_message<ValueError>([] { ReduceLROnPlateau({.factor = 1.0}); }), "factor"));
}

// ---- LearningRateScheduler ----

TEST(LearningRateScheduler, SetsTheRateAtEachEpochBegin) {
  TinyModel model;
  compile_sgd(model, 0.1);
  LearningRateScheduler cb([](int epoch, double lr) { return epoch == 0 ? lr : lr * 0.5; });
  cb.set_model(&model);
  cb.on_epoch_begin(0, {});
  EXPECT_FLOAT_EQ(static_cast<float>(model.optimizer()->learning_rate()), 0.1f);
  cb.on_epoch_begin(1, {});
  EXPECT_FLOAT_EQ(static_cast<float>(model.optimizer()->learning_rate()), 0.05f);

  LearningRateScheduler by_epoch([](int epoch) { return 0.01 * (epoch + 1); });
  by_epoch.set_model(&model);
  by_epoch.on_epoch_begin(2, {});
  EXPECT_FLOAT_EQ(static_cast<float>(model.optimizer()->learning_rate()), 0.03f);
}

TEST(LearningRateScheduler, RejectsBadRatesAndUncompiledModels) {
  TinyModel model;
  LearningRateScheduler cb([](int) { return -1.0; });
  cb.set_model(&model);
  EXPECT_TRUE(contains(error_message<ValueError>([&] { cb.on_epoch_begin(0, {}); }), "compile"));
  compile_sgd(model, 0.1);
  EXPECT_TRUE(contains(error_message<ValueError>([&] { cb.on_epoch_begin(0, {}); }), "returned -1"));
}

// ---- TerminateOnNaN ----

TEST(TerminateOnNaN, StopsOnNaNOrInfiniteLoss) {
  LogCapture log("kestrel.callbacks");
  TinyModel model;
  TerminateOnNaN cb;
  cb.set_model(&model);
  cb.on_train_batch_end(0, {{"loss", 0.5}});
  cb.on_train_batch_end(1, {{"accuracy", kNaN}});
  EXPECT_FALSE(model.stop_training);
  cb.on_train_batch_end(2, {{"loss", kNaN}});
  EXPECT_TRUE(model.stop_training);
  EXPECT_TRUE(contains(log.text(), "Batch 2: Invalid loss")) << log.text();
  model.stop_training = false;
  cb.on_train_batch_end(3, {{"loss", -kInf}});
  EXPECT_TRUE(model.stop_training);
}

// ---- LambdaCallback and HistoryCallback ----

TEST(LambdaCallback, CallsTheFunctionsGiven) {
  std::vector<std::string> calls;
  auto record = [&](const std::string& what) { calls.push_back(what); };
  LambdaCallback cb({.on_epoch_begin = [&](int e, const Logs&) { record("begin " + std::to_string(e)); },
                     .on_epoch_end = [&](int e, const Logs& l) { record("end " + std::to_string(l.at("loss"))); },
                     .on_train_end = [&](const Logs&) { record("train end"); },
                     .on_train_batch_end = [&](std::int64_t b, const Logs&) { record("batch " + std::to_string(b)); }});
  cb.on_train_begin({});  // not given: nothing happens
  cb.on_epoch_begin(0, {});
  cb.on_train_batch_begin(0, {});
  cb.on_train_batch_end(0, {});
  cb.on_epoch_end(0, {{"loss", 2.0}});
  cb.on_train_end({});
  EXPECT_EQ(calls, (std::vector<std::string>{"begin 0", "batch 0", "end 2.000000", "train end"}));
}

TEST(HistoryCallback, RecordsEachEpoch) {
  HistoryCallback cb;
  cb.on_train_begin({});
  cb.on_epoch_end(0, {{"loss", 1.0}, {"val_loss", 1.5}});
  cb.on_epoch_end(1, {{"loss", 0.5}, {"val_loss", 1.25}});
  EXPECT_EQ(cb.history().epoch, (std::vector<int>{0, 1}));
  EXPECT_EQ(cb.history().history.at("loss"), (std::vector<double>{1.0, 0.5}));
  EXPECT_EQ(cb.history().history.at("val_loss"), (std::vector<double>{1.5, 1.25}));
  cb.on_train_begin({});
  EXPECT_TRUE(cb.history().epoch.empty());
}

// ---- CSVLogger ----

TEST(CSVLogger, WritesSortedKeysAsKerasDoes) {
  ScratchDir dir;
  const std::string path = dir / "training.log";
  CSVLogger cb(path);
  cb.on_train_begin({});
  cb.on_epoch_end(0, {{"loss", 1.0}, {"accuracy", 0.5}, {"val_loss", 0.25}});
  cb.on_epoch_end(1, {{"loss", 0.1}, {"accuracy", 1.0 / 3.0}, {"extra", 7.0}});
  cb.on_train_end({});
  EXPECT_EQ(read_file(path),
            "epoch,accuracy,loss,val_loss\r\n"
            "0,0.5,1.0,0.25\r\n"
            "1,0.3333333333333333,0.1,NA\r\n");
}

TEST(CSVLogger, AppendsWithoutASecondHeaderAndUsesTheSeparator) {
  ScratchDir dir;
  const std::string path = dir / "training.log";
  CSVLogger first(path, {.separator = ';'});
  first.on_train_begin({});
  first.on_epoch_end(0, {{"loss", 2.0}});
  first.on_train_end({});
  CSVLogger resumed(path, {.separator = ';', .append = true});
  resumed.on_train_begin({});
  resumed.on_epoch_end(1, {{"loss", 1e-05}});
  resumed.on_train_end({});
  EXPECT_EQ(read_file(path), "epoch;loss\r\n0;2.0\r\n1;1e-05\r\n");

  CSVLogger fresh(dir / "new.log", {.append = true});
  fresh.on_train_begin({});
  fresh.on_epoch_end(0, {{"loss", 3.0}, {"a,b", 1.0}});
  fresh.on_train_end({});
  EXPECT_EQ(read_file(dir / "new.log"), "epoch,\"a,b\",loss\r\n0,1.0,3.0\r\n");
}

TEST(CSVLogger, UnwritablePathIsAnIOError) {
  CSVLogger cb("/nonexistent-dir/training.log");
  EXPECT_TRUE(contains(error_message<IOError>([&] { cb.on_train_begin({}); }), "/nonexistent-dir/training.log"));
}

// ---- ModelCheckpoint ----

TEST(ModelCheckpoint, FormatsThePathAsPythonDoes) {
  ModelCheckpoint cb("ckpt/{epoch:02d}-{val_loss:.4f}.weights.h5");
  EXPECT_EQ(cb.file_path(2, std::nullopt, {{"val_loss", 0.25}}), "ckpt/03-0.2500.weights.h5");
  ModelCheckpoint plain("{epoch}_{loss}_{{x}}.h5");
  EXPECT_EQ(plain.file_path(0, std::nullopt, {{"loss", 0.5}}), "1_0.5_{x}.h5");
  ModelCheckpoint batches("b{epoch}-{batch:03d}.weights.h5", {.save_freq = std::int64_t{10}});
  EXPECT_EQ(batches.file_path(1, 9, {}), "b2-010.weights.h5");
  EXPECT_TRUE(contains(error_message<ValueError>([&] {
                         cb.file_path(0, std::nullopt, {{"loss", 1.0}});
                       }),
                       "no value named 'val_loss'"));
}

TEST(ModelCheckpoint, RejectsPathsKestrelCannotWrite) {
  EXPECT_TRUE(contains(error_message<ValueError>([] { ModelCheckpoint("model.pt"); }), "model.pt"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { ModelCheckpoint("m.keras", {.save_weights_only = true}); }),
                       "save_weights_only saves weights"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { ModelCheckpoint("m.h5", {.save_freq = "step"}); }), "save_freq"));
  EXPECT_TRUE(contains(error_message<ValueError>([] { ModelCheckpoint("m.h5", {.save_freq = std::int64_t{0}}); }),
                       "save_freq"));
}

TEST(ModelCheckpoint, SaveBestOnlySavesImprovements) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.1);
  ModelCheckpoint cb(dir / "ckpt/{epoch:02d}.weights.h5", {.save_best_only = true});
  cb.set_model(&model);
  const std::vector<double> losses{0.5, 0.6, 0.4, 0.4};
  for (std::size_t e = 0; e < losses.size(); ++e) {
    cb.on_epoch_begin(static_cast<int>(e), {});
    cb.on_epoch_end(static_cast<int>(e), {{"loss", 1.0}, {"val_loss", losses[e]}});
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt/01.weights.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt/02.weights.h5"));
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt/03.weights.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt/04.weights.h5"));  // equal is not better
  EXPECT_DOUBLE_EQ(cb.best(), 0.4);
}

TEST(ModelCheckpoint, SavedWeightsLoadBack) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.1);
  model.set_w(2.5f);
  ModelCheckpoint cb(dir / "last.weights.h5");
  cb.set_model(&model);
  cb.on_epoch_end(0, {{"loss", 1.0}});
  TinyModel other;
  compile_sgd(other, 0.1);
  other.load_weights(dir / "last.weights.h5");
  EXPECT_EQ(other.w(), 2.5f);
}

TEST(ModelCheckpoint, AKerasOrH5PathSavesTheWholeModel) {
  ScratchDir dir;
  Sequential model({layers::Dense(2)});
  model.build({1, 3});
  for (const char* extension : {".keras", ".h5"}) {
    ModelCheckpoint cb(dir / (std::string("epoch{epoch}") + extension));
    cb.set_model(&model);
    cb.on_epoch_end(0, {{"loss", 1.0}});
    const std::unique_ptr<Model> loaded = models::load_model(dir / (std::string("epoch1") + extension));
    EXPECT_EQ(loaded->class_name(), "Sequential") << extension;
    EXPECT_EQ(loaded->weights().front().value().to_vector<float>(), model.weights().front().value().to_vector<float>())
        << extension;
  }
  // save_weights_only keeps an ".h5" checkpoint to the weights (Keras 2's weights layout).
  ModelCheckpoint weights_only(dir / "weights.h5", {.save_weights_only = true});
  weights_only.set_model(&model);
  weights_only.on_epoch_end(0, {{"loss", 1.0}});
  EXPECT_TRUE(contains(error_message<ValueError>([&] { models::load_model(dir / "weights.h5"); }),
                       "holds weights, not a model"));
}

TEST(ModelCheckpoint, SavesWithoutTheMonitorButWarns) {
  LogCapture log("kestrel.callbacks");
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.1);
  ModelCheckpoint cb(dir / "m.weights.h5", {.save_best_only = true});
  cb.set_model(&model);
  cb.on_epoch_end(0, {{"loss", 1.0}});
  EXPECT_TRUE(std::filesystem::exists(dir / "m.weights.h5"));
  EXPECT_TRUE(contains(log.text(), "only with 'val_loss' available")) << log.text();
}

TEST(ModelCheckpoint, SavesEveryNBatchesAcrossEpochs) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.1);
  ModelCheckpoint cb(dir / "e{epoch}-b{batch}.weights.h5", {.save_freq = std::int64_t{3}});
  cb.set_model(&model);
  for (int epoch = 0; epoch < 2; ++epoch) {
    cb.on_epoch_begin(epoch, {});
    for (std::int64_t b = 0; b < 4; ++b) cb.on_train_batch_end(b, {{"loss", 1.0}});
    cb.on_epoch_end(epoch, {{"loss", 1.0}});
  }
  // Batches 3 and 6 overall: batch 3 of epoch 1, then batch 2 of epoch 2.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"e1-b3.weights.h5", "e2-b2.weights.h5"}));
}

TEST(ModelCheckpoint, MaxModeForAccuracy) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.1);
  ModelCheckpoint cb(dir / "{epoch}.weights.h5", {.monitor = "val_accuracy", .save_best_only = true});
  cb.set_model(&model);
  cb.on_epoch_end(0, {{"val_accuracy", 0.5}});
  cb.on_epoch_end(1, {{"val_accuracy", 0.4}});
  cb.on_epoch_end(2, {{"val_accuracy", 0.6}});
  EXPECT_TRUE(std::filesystem::exists(dir / "1.weights.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "2.weights.h5"));
  EXPECT_TRUE(std::filesystem::exists(dir / "3.weights.h5"));
}

// ---- Python formatting ----

TEST(PythonFormat, FloatReprMatchesPython) {
  using detail::python_float_repr;
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(100.0), "100.0");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
  EXPECT_EQ(python_float_repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(1e-05), "1e-05");
  EXPECT_EQ(python_float_repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(-1.2345678901234567e+17), "-1.2345678901234566e+17");
  EXPECT_EQ(python_float_repr(1e100), "1e+100");
  EXPECT_EQ(python_float_repr(123.456), "123.456");
  EXPECT_EQ(python_float_repr(kNaN), "nan");
  EXPECT_EQ(python_float_repr(-kInf), "-inf");
}

TEST(PythonFormat, SpecsAndErrors) {
  using detail::python_format;
  const std::map<std::string, detail::FormatValue> v{{"epoch", std::int64_t{7}}, {"loss", 0.123456}};
  EXPECT_EQ(python_format("{epoch:03d}|{epoch:>4}|{epoch:.2f}|{loss:.2e}|{loss:.1%}|{loss}", v),
            "007|   7|7.00|1.23e-01|12.3%|0.123456");
  EXPECT_TRUE(contains(error_message<ValueError>([&] { python_format("{loss:d}", v); }), "'d' is for integers"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { python_format("{epoch", v); }), "unmatched '{'"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { python_format("a}b", v); }), "single '}'"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { python_format("{loss:q}", v); }), "bad format spec"));
}

}  // namespace
}  // namespace kestrel::callbacks
