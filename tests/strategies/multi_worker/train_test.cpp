// Workers train like one replica: fit under MultiWorkerMirroredStrategy with 8 replicas in sync
// (2 workers x 4 local replicas, or 4 x 2), at a global batch B, ends within 1e-5 of one replica
// at batch B, eagerly and compiled; every worker ends with the same bits, runs are bitwise
// reproducible, and what callbacks see (losses, metrics, validation) is the same on every worker.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include "framework/callbacks/csv_logger.h"
#include "framework/callbacks/early_stopping.h"
#include "framework/callbacks/lambda_callback.h"
#include "framework/callbacks/model_checkpoint.h"
#include "framework/callbacks/reduce_lr_on_plateau.h"
#include "framework/callbacks/terminate_on_nan.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/reduce.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"
#include "tests/strategies/multi_worker/same_on_every_worker.h"
#include "tests/strategies/multi_worker/this_job.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;
using testing::same_on_every_worker;
using testing::workers;

constexpr int kReplicasInSync = 8;

// Local replicas per worker so that 8 replicas are in sync, whatever mpirun's -np (2 or 4).
MultiWorkerOptions eight_in_sync() { return {.local_replicas = kReplicasInSync / workers().count()}; }

struct Data {
  Tensor x, y;
};
Data data_of(std::int64_t n, std::uint64_t seed) {
  return {random::normal({n, 12}, random::Key(seed)), random::randint({n}, random::Key(seed + 1), 0, 3)};
}

struct Trained {
  std::vector<Tensor> weights;
  History history;
  Logs evaluated;
  Tensor predicted;
};

// A fresh MLP (seed 5) trained for 20 steps of a global batch of 16 (2 epochs of 160 samples)
// under `strategy` (null: no scope, one replica), then evaluated and run on 40 samples. With
// dropout, each replica draws its own masks by its id in sync, so 8 replicas match 8, not 1.
Trained train(const Strategy* strategy, bool jit, bool dropout, std::vector<Handle<Callback>> callbacks = {},
              int epochs = 2) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dropout(dropout ? 0.1 : 0.0), layers::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = jit});
  const Data data = data_of(160, 40), validation = data_of(48, 50);
  Trained run;
  run.history = model.fit(data.x, data.y,
                          {.batch_size = 16,
                           .epochs = epochs,
                           .verbose = 0,
                           .callbacks = std::move(callbacks),
                           .validation_data = ValidationData{validation.x, validation.y},
                           .shuffle = false});
  run.weights = model.get_weights();
  const Data test = data_of(40, 60);
  run.evaluated = model.evaluate(test.x, test.y, {.batch_size = 16, .verbose = 0});  // 16, 16 and 8 (padded)
  run.predicted = model.predict(test.x, {.batch_size = 16});
  return run;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::vector<float> g = got[i].to_vector<float>(), w = want[i].to_vector<float>();
    ASSERT_EQ(g.size(), w.size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], tolerance * (1.0 + std::abs(w[k]))) << "tensor " << i << " element " << k;
    }
  }
}

void expect_alike(const Trained& eight, const Trained& one) {
  expect_close(eight.weights, one.weights, 1e-5);
  EXPECT_NEAR(eight.history.history.at("loss").back(), one.history.history.at("loss").back(), 1e-5);
  EXPECT_NEAR(eight.history.history.at("val_loss").back(), one.history.history.at("val_loss").back(), 1e-5);
  EXPECT_NEAR(eight.evaluated.at("loss"), one.evaluated.at("loss"), 1e-5);
  EXPECT_DOUBLE_EQ(eight.evaluated.at("accuracy"), one.evaluated.at("accuracy"));
  // predict gives every worker the whole batch's outputs, padding dropped.
  expect_close({eight.predicted}, {one.predicted}, 1e-5);
}

TEST(MultiWorker, EightReplicasOverTheWorkersTrainLikeOne) {
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  ASSERT_EQ(strategy.num_replicas_in_sync(), kReplicasInSync);
  ASSERT_EQ(strategy.num_workers(), workers().count());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    expect_alike(train(&strategy, jit, false), train(nullptr, jit, false));
  }
}

TEST(MultiWorker, EightReplicasOverTheWorkersTrainLikeEightInOneProcessWithDropout) {
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  const MirroredStrategy one_process({.num_replicas = kReplicasInSync});
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    expect_alike(train(&strategy, jit, true), train(&one_process, jit, true));
  }
}

TEST(MultiWorker, EveryWorkerEndsWithTheSameBitsAndRunsRepeatThem) {
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    const Trained first = train(&strategy, jit, true), second = train(&strategy, jit, true);
    EXPECT_TRUE(same_on_every_worker(first.weights));
    for (std::size_t i = 0; i < first.weights.size(); ++i) {
      EXPECT_EQ(first.weights[i].to_vector<float>(), second.weights[i].to_vector<float>()) << "weight " << i;
    }
    // What the callbacks saw, and what evaluate returned, is the same on every worker.
    std::vector<Tensor> logs;
    for (const auto& [name, values] : first.history.history) {
      logs.push_back(Tensor::from_vector(std::vector<float>(values.begin(), values.end()),
                                         {static_cast<std::int64_t>(values.size())}));
    }
    for (const auto& [name, value] : first.evaluated) logs.push_back(Tensor::scalar(value));
    EXPECT_TRUE(same_on_every_worker(logs));
  }
}

TEST(MultiWorker, EarlyStoppingStopsEveryWorkerAtTheSameEpoch) {
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  // Of 5 epochs, stops after the second: the validation loss fails to improve on the first's by
  // 10. Every worker sees the aggregated value, so every one stops there.
  const Trained run = train(&strategy, false, false,
                            {callbacks::EarlyStopping({.monitor = "val_loss", .min_delta = 10.0, .patience = 0})}, 5);
  const auto epochs = static_cast<std::int64_t>(run.history.history.at("loss").size());
  EXPECT_EQ(epochs, 2);
  EXPECT_EQ(workers().max(epochs), -workers().max(-epochs));
}

TEST(MultiWorker, ReduceLROnPlateauReducesAlikeOnEveryWorker) {
  clear_session();
  random::set_global_seed(5);
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  auto scope = strategy.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = "mse"});
  const Tensor x = random::normal({64, 4}, random::Key(3)), y = random::normal({64, 3}, random::Key(4));
  // The validation loss never improves by 10: reduced after epochs 2 and 3, on every worker.
  model.fit(x, y,
            {.batch_size = 16,
             .epochs = 3,
             .verbose = 0,
             .callbacks = {callbacks::ReduceLROnPlateau(
                 {.monitor = "val_loss", .factor = 0.5, .patience = 0, .min_delta = 10.0})},
             .validation_data = ValidationData{x, y}});
  const double learning_rate = model.optimizer()->learning_rate();
  EXPECT_NEAR(learning_rate, 0.0025, 1e-9);
  EXPECT_TRUE(same_on_every_worker({Tensor::scalar(learning_rate)}));
}

TEST(MultiWorker, ANaNInOneWorkersRowsStopsEveryWorkerAtTheSameStep) {
  clear_session();
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  auto scope = strategy.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  // Row 63 is the last of step 3's global batch of 16 (0-based): the last worker's rows alone.
  std::vector<float> features = random::normal({160, 12}, random::Key(9)).to_vector<float>();
  features[63 * 12] = std::numeric_limits<float>::quiet_NaN();
  std::int64_t steps = 0;
  model.fit(
      Tensor::from_vector(features, {160, 12}), Tensor::zeros({160, 3}),
      {.batch_size = 16,
       .epochs = 1,
       .verbose = 0,
       .callbacks = {callbacks::TerminateOnNaN(),
                     callbacks::LambdaCallback({.on_train_batch_end = [&](std::int64_t, const Logs&) { ++steps; }})},
       .shuffle = false});
  // The loss every worker logs is the global batch's, NaN on all of them at step 3.
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(workers().max(steps), -workers().max(-steps));
}

TEST(MultiWorker, TheChiefAloneWritesCheckpointsAndLogs) {
  // Each worker names its own files, so what exists after fit says which workers wrote.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kestrel_multi_worker_files";
  std::filesystem::create_directories(dir);
  const std::string mine = "worker" + std::to_string(workers().index());
  const std::filesystem::path checkpoint = dir / (mine + ".weights.h5"), csv = dir / (mine + ".csv");
  std::filesystem::remove(checkpoint);
  std::filesystem::remove(csv);
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  train(&strategy, false, false, {callbacks::ModelCheckpoint(checkpoint.string()), callbacks::CSVLogger(csv.string())});
  EXPECT_EQ(std::filesystem::exists(checkpoint), workers().is_chief());
  EXPECT_EQ(std::filesystem::exists(csv), workers().is_chief());
  std::filesystem::remove(checkpoint);
  std::filesystem::remove(csv);
}

TEST(MultiWorker, SaveWeightsIsWrittenByTheChiefAndAFailedWriteFailsEveryWorker) {
  clear_session();
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  auto scope = strategy.scope();
  Sequential model({layers::Dense(3)});
  model.build({1, 4});
  // Only the chief writes, so only it could see the error: every worker must throw, or the others
  // would go on into a collective the chief never reaches.
  const std::string m = error_message<IOError>([&] { model.save_weights("/proc/kestrel/model.weights.h5"); });
  if (workers().is_chief()) {
    EXPECT_TRUE(contains(m, "/proc/kestrel/model.weights.h5")) << m;
  } else {
    EXPECT_TRUE(contains(m,
                         "save_weights('/proc/kestrel/model.weights.h5'): the chief (worker 0) could not write the "
                         "file; its error says why"))
        << m;
  }
  // A write that works returns on every worker once the file is whole.
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "kestrel_multi_worker_save.weights.h5";
  model.save_weights(path.string());
  EXPECT_TRUE(std::filesystem::exists(path));
  model.load_weights(path.string());
  strategy.wait_for_workers("the test's load");
  if (workers().is_chief()) std::filesystem::remove(path);
}

TEST(MultiWorker, ACustomLoopReducesAndGathersOverEveryReplica) {
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  const int local = strategy.num_local_replicas(), first = strategy.first_local_replica();
  const PerReplica<Tensor> ids = strategy.run([&](int replica) {
    return Tensor::from_vector(std::vector<float>{static_cast<float>(first + replica)}, {1, 1});
  });
  ASSERT_EQ(ids.size(), local);
  EXPECT_FLOAT_EQ(strategy.reduce(ReduceOp::SUM, ids).item(), 28.0f);  // 0 + 1 + ... + 7
  EXPECT_FLOAT_EQ(strategy.reduce(ReduceOp::MEAN, ids, 0).item(), 3.5f);
  for (const int axis : {0, 1}) {
    const std::vector<float> all = strategy.gather(ids, axis).to_vector<float>();
    ASSERT_EQ(all.size(), static_cast<std::size_t>(kReplicasInSync));
    for (int r = 0; r < kReplicasInSync; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], static_cast<float>(r));
  }
}

TEST(MultiWorker, AWorkerWithAnotherModelFailsAtTheFirstStepSayingWhatDiffers) {
  clear_session();
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  auto scope = strategy.scope();
  const std::int64_t units = workers().index() == 1 ? 32 : 16;
  Sequential model({layers::Dense(units), layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::string m = error_message<ValueError>([&] {
    model.fit(Tensor::zeros({16, 4}), Tensor::zeros({16, 3}), {.batch_size = 16, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "the models differ between the workers: worker 0 (the chief) has model 'sequential")) << m;
  EXPECT_TRUE(contains(m, "with 131 parameters in 4 weights; worker 1 has model")) << m;
  EXPECT_TRUE(contains(m, "with 259 parameters in 4 weights")) << m;
}

TEST(MultiWorker, AWorkerWithAnotherBatchSizeFailsAtTheFirstStep) {
  clear_session();
  const MultiWorkerMirroredStrategy strategy(eight_in_sync());
  auto scope = strategy.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::int64_t batch = workers().index() == 1 ? 32 : 16;
  const std::string m = error_message<ValueError>([&] {
    model.fit(Tensor::zeros({64, 4}), Tensor::zeros({64, 3}), {.batch_size = batch, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "fit's global batches differ between the workers")) << m;
  EXPECT_TRUE(contains(m, "[16,4]")) << m;
  EXPECT_TRUE(contains(m, "[32,4]")) << m;
}

}  // namespace
}  // namespace kestrel::distribute
