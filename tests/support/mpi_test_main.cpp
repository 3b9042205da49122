// main() of the test executables mpirun starts (tests/strategies/multi_worker): every worker runs
// every test, which meet in the workers' collectives; the chief prints GoogleTest's report, and
// the other workers print only their failures, each line marked with the worker, so a failure
// on any rank shows (and fails the job through its exit code). A fatal failure ends the job.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "strategies/workers.h"

namespace {

// Prints a non-chief worker's failures, marked with the worker (the chief's printer shows its own).
class WorkerFailures final : public testing::EmptyTestEventListener {
 public:
  explicit WorkerFailures(int worker) : worker_(worker) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[worker " << worker_ << "] " << (result.file_name() != nullptr ? result.file_name() : "") << ":"
              << result.line_number() << ": " << result.summary() << std::endl;
  }

 private:
  int worker_;
};

// A fatal failure (ASSERT_*) leaves its test early, skipping collectives the other workers then
// wait in forever: the job ends at once instead, failed, with the failure printed first.
class EndJobOnFatalFailure final : public testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.fatally_failed()) return;
    kestrel::distribute::Workers::of_this_job()->abort(
        1, std::string("a fatal failure in ") + testing::UnitTest::GetInstance()->current_test_info()->name());
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const auto workers = kestrel::distribute::Workers::of_this_job();
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  if (!workers->is_chief()) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new WorkerFailures(workers->index()));
  }
  // After the printers, so the failure is shown before the job ends.
  listeners.Append(new EndJobOnFatalFailure);
  return RUN_ALL_TESTS();
}
