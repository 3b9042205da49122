// BackupAndRestore: a run killed mid-epoch and started again ends with the same weights, bit for
// bit, as one never killed (arrays and a shuffled dataset, eager and compiled, backups per epoch
// and per N steps); a backup being written when the process dies leaves the previous one in
// force; bad backups and options are errors naming the file or option.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "framework/callbacks/backup_and_restore.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/dataset.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/callbacks/test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::callbacks {
namespace {

using testing::contains;
using testing::error_message;
using testing::ScratchDir;

struct Killed : std::runtime_error {
  Killed() : std::runtime_error("killed") {}
};

// Stands for the process dying: throws once training reaches step `step` of epoch `epoch`.
class KillAt : public Callback {
 public:
  KillAt(int epoch, std::int64_t step) : epoch_(epoch), step_(step) {}
  void on_epoch_begin(int epoch, const Logs&) override { current_ = epoch; }
  void on_train_batch_begin(std::int64_t batch, const Logs&) override {
    if (current_ == epoch_ && batch == step_) throw Killed();
  }

 private:
  int epoch_;
  std::int64_t step_;
  int current_ = 0;
};

struct Program {
  bool jit = false;
  bool dataset = false;  // a shuffled data::Dataset, else arrays shuffled by fit
  int steps_per_execution = 1;
  BackupAndRestoreOptions backup;
};

struct Trained {
  std::vector<Tensor> weights;
  History history;
};

// The same program each time: a fresh MLP with dropout (seed 7), Adam, 3 epochs of 10 steps.
Trained train(const Program& program, const std::string& backup_dir,
              std::optional<std::pair<int, std::int64_t>> kill = {}) {
  clear_session();
  random::set_global_seed(7);
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.2), layers::Dense(3)});
  model.build({1, 12});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = program.jit,
                 .steps_per_execution = program.steps_per_execution});
  const Tensor x = random::normal({120, 12}, random::Key(1));
  const Tensor y = random::randint({120}, random::Key(2), 0, 3);
  std::vector<Handle<Callback>> callbacks = {BackupAndRestore(backup_dir, program.backup)};
  if (kill) callbacks.push_back(KillAt(kill->first, kill->second));
  const FitOptions options{.batch_size = 12, .epochs = 3, .verbose = 0, .callbacks = callbacks};
  Trained run;
  if (program.dataset) {
    const data::Dataset data = data::Dataset::from_tensor_slices({{"x", x}, {"labels", y}}).shuffle(120).batch(12);
    run.history = model.fit(data, options);
  } else {
    run.history = model.fit(x, y, options);
  }
  run.weights = model.get_weights();
  return run;
}

void expect_same_bits(const Trained& resumed, const Trained& whole) {
  ASSERT_EQ(resumed.weights.size(), whole.weights.size());
  for (std::size_t i = 0; i < whole.weights.size(); ++i) {
    EXPECT_EQ(resumed.weights[i].to_vector<float>(), whole.weights[i].to_vector<float>()) << "weight " << i;
  }
  // The last epoch's logs too: the resumed epoch's metrics went on from the backup's.
  for (const char* key : {"loss", "accuracy"}) {
    EXPECT_EQ(resumed.history.history.at(key).back(), whole.history.history.at(key).back()) << key;
  }
}

void expect_resume_matches(const Program& program, std::pair<int, std::int64_t> kill) {
  ScratchDir dir;
  const Trained whole = train(program, dir / "whole");
  EXPECT_THROW(train(program, dir / "backup", kill), Killed);
  ASSERT_TRUE(std::filesystem::exists(dir / "backup/checkpoint"));
  const Trained resumed = train(program, dir / "backup");
  expect_same_bits(resumed, whole);
  EXPECT_FALSE(std::filesystem::exists(dir / "backup")) << "delete_checkpoint removes it at the end";
}

TEST(BackupAndRestore, AResumedRunEndsWithTheBitsOfOneNeverKilled) {
  // Killed in epoch 2 (0-based 1) at its step 4: the backup of epoch 1's end is restored.
  expect_resume_matches({}, {1, 4});
}

TEST(BackupAndRestore, MidEpochBackupsResumeMidEpoch) {
  // Every 3 steps: killed at step 7 of epoch 2, the backup after its step 6 is restored.
  expect_resume_matches({.backup = {.save_freq = std::int64_t{3}}}, {1, 7});
}

TEST(BackupAndRestore, AShuffledDatasetIsReplayedToItsPosition) {
  expect_resume_matches({.dataset = true, .backup = {.save_freq = std::int64_t{4}}}, {2, 5});
}

TEST(BackupAndRestore, CompiledStepsResumeAlike) {
  expect_resume_matches({.jit = true, .backup = {.save_freq = std::int64_t{3}}}, {1, 7});
}

TEST(BackupAndRestore, ABackupAtTheLastStepOfAnEpochResumesWithThatEpochsLogs) {
  // Every 5 steps of 10: killed at step 2 of epoch 2 (0-based 1), the backup after epoch 1's
  // last step is restored; epoch 1 has no step left, and still reports its loss and accuracy.
  ScratchDir dir;
  const Program program{.backup = {.save_freq = std::int64_t{5}}};
  const Trained whole = train(program, dir / "whole");
  EXPECT_THROW(train(program, dir / "backup", {{1, 2}}), Killed);
  const Trained resumed = train(program, dir / "backup");
  expect_same_bits(resumed, whole);
  EXPECT_EQ(resumed.history.epoch, (std::vector<int>{0, 1, 2}));
  for (const char* key : {"loss", "accuracy"})
    EXPECT_EQ(resumed.history.history.at(key), whole.history.history.at(key));
}

TEST(BackupAndRestore, ExecutionsOfSeveralStepsResumeAlike) {
  // Compiled executions of 2 steps, a backup every 4 steps: killed as the execution of steps 8
  // and 9 of epoch 2 (0-based 1) begins, the last backup (after its step 5) is restored, and the
  // executions go on from there.
  expect_resume_matches({.jit = true, .steps_per_execution = 2, .backup = {.save_freq = std::int64_t{4}}}, {1, 8});
}

TEST(BackupAndRestore, ABackupCutShortLeavesThePreviousInForce) {
  ScratchDir dir;
  const Program program{.backup = {.save_freq = std::int64_t{3}, .delete_checkpoint = false}};
  EXPECT_THROW(train(program, dir / "backup", {{1, 7}}), Killed);
  BackupAndRestore callback(dir / "backup");
  const std::optional<std::filesystem::path> latest = callback.latest_backup();
  ASSERT_TRUE(latest.has_value());
  // A process killed while writing the next backup leaves its directory half written.
  std::filesystem::create_directories(dir / "backup/backup-99.tmp");
  std::ofstream(dir / "backup/backup-99.tmp/model.weights.h5") << "half a file";
  EXPECT_EQ(callback.latest_backup(), latest);
  const Trained whole = train({.backup = {.save_freq = std::int64_t{3}}}, dir / "whole");
  expect_same_bits(train(program, dir / "backup"), whole);
  EXPECT_TRUE(std::filesystem::exists(dir / "backup/checkpoint")) << "delete_checkpoint = false keeps it";
}

TEST(BackupAndRestore, ADamagedBackupIsAnErrorNamingTheFile) {
  ScratchDir dir;
  const Program program{.backup = {.delete_checkpoint = false}};
  train(program, dir / "backup");
  std::ofstream(dir / "backup/checkpoint") << "elsewhere\n";
  std::string m = error_message<IOError>([&] { train(program, dir / "backup"); });
  EXPECT_TRUE(contains(m, "names 'elsewhere', which is not a backup in that directory")) << m;

  std::ofstream(dir / "backup/checkpoint") << "backup-3\n";
  std::ofstream(dir / "backup/backup-3/training_state.json") << "{not json";
  m = error_message<IOError>([&] { train(program, dir / "backup"); });
  EXPECT_TRUE(contains(m, "backup-3/training_state.json")) << m;
  EXPECT_TRUE(contains(m, "remove the backup directory to start afresh")) << m;
}

TEST(BackupAndRestore, AModelNotBuiltIsRefusedWithTheFix) {
  ScratchDir dir;
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::string m = error_message<ValueError>([&] {
    model.fit(Tensor::zeros({8, 4}), Tensor::zeros({8, 3}), {.verbose = 0, .callbacks = {BackupAndRestore(dir / "b")}});
  });
  EXPECT_TRUE(contains(m, "BackupAndRestore: model 'sequential")) << m;
  EXPECT_TRUE(contains(m, "is not built; build it before fit (model.build(input_shape)")) << m;
}

TEST(BackupAndRestore, BadOptionsAreRefused) {
  std::string m = error_message<ValueError>([] { BackupAndRestore("/tmp/b", {.save_freq = std::int64_t{0}}); });
  EXPECT_TRUE(contains(m, "BackupAndRestore: save_freq must be \"epoch\" or a number of batches > 0, got 0")) << m;
  m = error_message<ValueError>([] { BackupAndRestore("/tmp/b", {.save_freq = "batch"}); });
  EXPECT_TRUE(contains(m, "got 'batch'")) << m;
  m = error_message<ValueError>([] { BackupAndRestore(""); });
  EXPECT_TRUE(contains(m, "backup_dir is empty")) << m;
}

}  // namespace
}  // namespace kestrel::callbacks
