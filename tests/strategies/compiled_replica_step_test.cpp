// Under jit_compile the whole replica step is one compiled program: forward, loss, backward, the
// all-reduce of the gradients as collective ops, the optimizer's update and the metrics. The graph
// dumps show it; the program runs in stages split at the collectives, the update once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"
#include "tests/support/step_allocations.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::count_of;
using testing::LogCapture;

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Dumps every compile of a scope's fits into a fresh folder (KESTREL_DUMP_DIR).
class DumpFolder {
 public:
  DumpFolder()
      : path_(std::filesystem::temp_directory_path() / ("kestrel_replica_dump_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    ::setenv("KESTREL_DUMP_DIR", path_.c_str(), 1);
  }
  ~DumpFolder() {
    ::unsetenv("KESTREL_DUMP_DIR");
    std::filesystem::remove_all(path_);
  }
  std::string file(const std::string& name) const { return read(path_ / name); }

 private:
  std::filesystem::path path_;
};

TEST(CompiledReplicaStep, TheAllReduceTheUpdateAndTheMetricsAreInTheProgram) {
  clear_session();
  random::set_global_seed(5);
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  model.compile({.optimizer = "adam",
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = true});
  const Tensor x = random::normal({32, 12}, random::Key(1));
  const Tensor y = random::randint({32}, random::Key(2), 0, 3);
  const DumpFolder dumps;
  LogCapture log("kestrel.jit");
  model.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});

  // One collective per gradient (4 weights) and per tracked loss value (the loss and its rows),
  // the two kernels' as products over every replica's rows; the metrics' all-gathers of the
  // labels, the predictions and the row mask; then the update.
  const std::string text = log.text();
  EXPECT_TRUE(contains(text, "'train_step' runs on 8 replicas in stages: stage 0: replica part (") &&
              contains(text,
                       "-> cross_replica_sum x6 (2 as products over every replica's rows), all_gather x3; "
                       "stage 1: shared part ("))
      << text;
  EXPECT_EQ(count_of(text, "compiled 'train_step' #"), 1u) << text;

  // The traced program: the collectives, then Adam's update of every weight and slot.
  const std::string traced = dumps.file("train_step.1.traced.txt");
  EXPECT_EQ(count_of(traced, "= cross_replica_sum("), 6u) << traced;
  EXPECT_EQ(count_of(traced, "= all_gather("), 3u) << traced;
  const std::string update = dumps.file("train_step.1.part1.optimized.txt");
  for (const char* state : {"dense/kernel", "dense_1/bias", "momentum", "velocity", "iteration", "count"}) {
    EXPECT_TRUE(contains(update, state)) << state << " is not updated in the shared part:\n" << update;
  }
  // The replica part computes gradients and reads no optimizer slot.
  const std::string replica = dumps.file("train_step.1.part0.optimized.txt");
  EXPECT_FALSE(contains(replica, "momentum")) << replica;
  EXPECT_EQ(count_of(replica, "updates input"), 0u) << replica;
}

// The replicas' steady steps allocate nothing: the state's buffers are donated to its update,
// and every other buffer (the shards, the gradients, the all-reduce's sums, the metrics' gathered
// rows) is the one the step before used, written again.
TEST(CompiledReplicaStep, SteadyStepsOfTheReplicasAllocateNothing) {
  clear_session();
  random::set_global_seed(3);
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  Sequential model({layers::Dense(64, {.activation = "relu"}), layers::Dropout(0.1), layers::Dense(4)});
  model.compile({.optimizer = "adam",
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = true});
  const Tensor x = random::normal({320, 12}, random::Key(1));
  const Tensor y = random::randint({320}, random::Key(2), 0, 4);
  testing::StepAllocations steps;
  model.fit(x, y, {.batch_size = 32, .epochs = 1, .verbose = 0, .callbacks = {steps.callback()}});
  const std::vector<std::int64_t>& allocations = steps.per_step();
  ASSERT_EQ(allocations.size(), 10u);
  EXPECT_GT(allocations[0], 0) << "the first step compiles";
  for (std::size_t step = 2; step < allocations.size(); ++step) EXPECT_EQ(allocations[step], 0) << "step " << step;
}

// A train_step that writes a shared variable from its own replica's values, outside any merge
// point: each replica would write another value, so compiling it fails, naming the variable.
class WritesOutsideAMergePoint : public Sequential {
 public:
  WritesOutsideAMergePoint() : Sequential({layers::Dense(3)}) {}

 protected:
  void train_step(const Batch& batch) override {
    const Variable kernel = weights()[0];
    kernel.assign(kernel.value() + ops::mean(batch.x.tensor()));
  }
};

TEST(CompiledReplicaStep, AnUpdateOutsideAMergePointIsAnErrorNamingTheVariable) {
  clear_session();
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  WritesOutsideAMergePoint model;
  model.compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true});
  const std::string m = testing::error_message<JitError>([&] {
    model.fit(Tensor::zeros({16, 4}), Tensor::zeros({16, 3}), {.batch_size = 16, .verbose = 0});
  });
  EXPECT_TRUE(contains(m,
                       "'train_step' gives variable 'dense/kernel' a new value computed from one "
                       "replica's own values"))
      << m;
  EXPECT_TRUE(contains(m, "optimizer.apply, or distribute::merge_call")) << m;
}

// A train_step that decides on the host from a value of the step: fine eagerly, and compiled a
// rule-1 error that names the step being compiled and the fix.
class ReadsALossOnTheHost : public Sequential {
 public:
  ReadsALossOnTheHost() : Sequential({layers::Dense(3)}) {}

 protected:
  void train_step(const Batch& batch) override {
    if (compute_loss(batch, (*this)(batch.x, true)).item() > 1e9) return;
    Sequential::train_step(batch);
  }
};

TEST(CompiledReplicaStep, AnOverrideThatReadsAValueOnTheHostIsAnErrorNamingTheStep) {
  clear_session();
  TPUStrategy tpu(TPUClusterResolver::local());
  auto scope = tpu.scope();
  ReadsALossOnTheHost model;
  model.compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true});
  const std::string m = testing::error_message<JitError>([&] {
    model.fit(Tensor::zeros({16, 4}), Tensor::zeros({16, 3}), {.batch_size = 16, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "compiling 'train_step' on 8 replicas: rule 1")) << m;
  EXPECT_TRUE(contains(m, "ops::where")) << m;
  EXPECT_FALSE(model.weights()[0].value().is_symbolic());
}

}  // namespace
}  // namespace kestrel::distribute
