// main() of the test executables mpirun starts (tests/strategies/multi_worker): every worker runs
// every test, which meet in the workers' collectives; the chief prints GoogleTest's report, and
// the other workers print only their failures, each line marked with the worker, so a failure
// on any rank shows (and fails the job through its exit code).
#include <gtest/gtest.h>

#include <iostream>

#include "strategies/workers.h"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const auto workers = kestrel::distribute::Workers::of_this_job();
  if (!workers->is_chief()) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new WorkerFailures(workers->index()));
  }
  return RUN_ALL_TESTS();
}
