// Kills a process in the middle of a save, at points spread over every step of it, and checks
// after each kill that the previous file is untouched and loads, and that the next save of the
// path removes the temporary the killed one left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "framework/io/host_name.h"
#include "framework/saving/save_steps.h"
#include "tests/framework/saving/saving_test_util.h"

namespace kestrel {
namespace {

using saving::SaveStep;
using testing::ChainNet;
using testing::TinyDense;

/// Writes killed at, spread evenly from a save's first write to its last; the flush, sync and
/// rename are killed at besides.
constexpr std::size_t kWriteKills = 50;
/// Twelve dense layers, each with kernel, bias and their two momentum slots: more than
/// kWriteKills writes in either layout.
constexpr int kLayers = 12;

/// What the save hook sees: the steps a save took so far, and the step to die before.
struct StepLog {
  std::vector<SaveStep> steps;
  std::size_t kill_before = std::numeric_limits<std::size_t>::max();
};
StepLog step_log;

void log_step(SaveStep step) {
  if (step_log.steps.size() == step_log.kill_before) ::raise(SIGKILL);
  step_log.steps.push_back(step);
}

/// Installs log_step for the guard's lifetime.
class LoggedSaves {
 public:
  explicit LoggedSaves(std::size_t kill_before = std::numeric_limits<std::size_t>::max()) {
    step_log = {.kill_before = kill_before};
    saving::detail::set_save_hook(log_step);
  }
  ~LoggedSaves() { saving::detail::set_save_hook(nullptr); }
  LoggedSaves(const LoggedSaves&) = delete;
  LoggedSaves& operator=(const LoggedSaves&) = delete;
};

const char* step_name(SaveStep step) {
  switch (step) {
    case SaveStep::write: return "write";
    case SaveStep::flush: return "flush";
    case SaveStep::sync: return "sync";
    case SaveStep::rename: return "rename";
  }
  return "?";
}

/// The steps of a whole save of model to path (removed afterwards).
std::vector<SaveStep> steps_of_a_save(const Model& model, const std::string& path) {
  LoggedSaves saves;
  model.save_weights(path);
  std::filesystem::remove(path);
  return step_log.steps;
}

/// Indices into a whole save's steps: kWriteKills of its writes, evenly spaced and including the
/// first and the last, then every step that is not a write.
std::vector<std::size_t> kill_points(const std::vector<SaveStep>& steps) {
  std::vector<std::size_t> writes, points;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == SaveStep::write) writes.push_back(i);
  }
  if (writes.size() < kWriteKills) return {};
  for (std::size_t k = 0; k < kWriteKills; ++k) points.push_back(writes[k * (writes.size() - 1) / (kWriteKills - 1)]);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] != SaveStep::write) points.push_back(i);
  }
  return points;
}

Layer& add_dense(ChainNet& net, int) { return net.add_layer<TinyDense>(4); }

/// Every variable of the model and of its optimizer.
std::vector<Variable> state_of(const Model& model) {
  std::vector<Variable> state = model.weights();
  for (const Variable& v : model.optimizer()->variables()) state.push_back(v);
  return state;
}

/// Sets every variable to value, so that a load that assigns nothing shows.
void fill(const std::vector<Variable>& state, double value) {
  for (const Variable& v : state) v.assign(Tensor::full(v.shape(), value, v.dtype()));
}

/// Runs a save of model to path in a child process that dies before the step at index
/// kill_before; returns the child's pid, or -1 (with a failure recorded) when it did not die there.
pid_t save_killed(const Model& model, const std::string& path, std::size_t kill_before) {
  const pid_t child = ::fork();
  if (child == 0) {
    LoggedSaves saves(kill_before);
    try {
      model.save_weights(path);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);  // the save finished: the kill point was never reached
  }
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) {
    ADD_FAILURE() << "fork or waitpid failed";
    return -1;
  }
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    ADD_FAILURE() << "the save was not killed before step " << kill_before << " (wait status " << status << ")";
    return -1;
  }
  return child;
}

class KilledSave : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { clear_session(); }
  testing::ScratchDir dir_;
};

TEST_P(KilledSave, PreviousFileSurvivesEveryKillAndTheNextSaveRemovesTheTemporary) {
  const std::string name = std::string("ckpt") + GetParam();
  const std::string path = dir_.file(name);
  ChainNet saved(kLayers, add_dense);
  saved.build({1, 4});
  testing::compile_with_state(saved);
  saved.save_weights(path);
  ChainNet changed(kLayers, add_dense);  // what the killed saves write
  changed.build({1, 4});
  testing::compile_with_state(changed);
  fill(state_of(changed), 7.0);
  ChainNet loaded(kLayers, add_dense);
  loaded.build({1, 4});
  loaded.compile({.optimizer = testing::TestMomentum()});

  const std::vector<SaveStep> steps = steps_of_a_save(changed, dir_.file(std::string("count") + GetParam()));
  const std::vector<std::size_t> points = kill_points(steps);
  ASSERT_GE(points.size(), kWriteKills) << "a save of " << kLayers << " layers took only " << steps.size()
                                        << " steps: add layers to spread " << kWriteKills << " kills over its writes";

  std::size_t temporaries_left = 0;
  for (const std::size_t point : points) {
    SCOPED_TRACE("killed before step " + std::to_string(point) + " of " + std::to_string(steps.size()) + " (" +
                 step_name(steps[point]) + ")");
    const std::string before = testing::read_bytes(path);
    const pid_t child = save_killed(changed, path, point);
    ASSERT_GT(child, 0);
    // Compared as a bool: EXPECT_EQ would print both files on a failure.
    EXPECT_TRUE(testing::read_bytes(path) == before) << "the previous file changed";
    fill(state_of(loaded), 0.0);
    loaded.load_weights(path);
    const std::vector<Variable> expected = state_of(saved), actual = state_of(loaded);
    ASSERT_EQ(expected.size(), actual.size());
    for (std::size_t i = 0; i < expected.size(); ++i) testing::expect_same_values(expected[i], actual[i]);

    // Each step comes after the temporary was created, so each kill leaves one behind.
    const std::string temporary = name + ".tmp-" + io::host_name() + "-" + std::to_string(child);
    if (std::filesystem::exists(dir_.file(temporary))) ++temporaries_left;
    saved.save_weights(path);
    EXPECT_EQ(dir_.listing(), std::vector<std::string>{name});
  }
  EXPECT_EQ(temporaries_left, points.size());
  RecordProperty("kills", static_cast<int>(points.size()));
  RecordProperty("steps", static_cast<int>(steps.size()));
}

INSTANTIATE_TEST_SUITE_P(Layouts, KilledSave, ::testing::Values(".weights.h5", ".h5"),
                         [](const auto& info) { return info.index == 0 ? "Keras3" : "Keras2"; });

}  // namespace
}  // namespace kestrel
