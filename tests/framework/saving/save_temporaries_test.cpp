#include "framework/saving/save_temporaries.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/io/host_name.h"
#include "tests/framework/saving/saving_test_util.h"

namespace kestrel {
namespace {

using testing::ScratchDir;

/// The pid of a process that has exited and been reaped: no process has it (until it is reused).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

/// Another process that runs until the test ends, as a concurrent save would.
class RunningProcess {
 public:
  RunningProcess() : pid_(::fork()) {
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~RunningProcess() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SaveTemporaries, NameHoldsHostAndPid) {
  EXPECT_EQ(saving::temporary_path("dir/ckpt.h5"),
            "dir/ckpt.h5.tmp-" + io::host_name() + "-" + std::to_string(::getpid()));
}

TEST(SaveTemporaries, RemovesOnlyThoseOfEndedProcessesOnThisHost) {
  ScratchDir dir;
  RunningProcess running;
  const std::string ours = "ckpt.h5.tmp-" + io::host_name() + "-";
  const std::string dead = std::to_string(dead_pid());
  const std::vector<std::string> kept{
      "ckpt.h5",
      ours + std::to_string(running.pid()),            // a save in progress in another process
      ours + std::to_string(::getpid()),               // this process's own
      "ckpt.h5.tmp-another-host-" + dead,              // its pid means nothing here
      "other.h5.tmp-" + io::host_name() + "-" + dead,  // another checkpoint's
      ours + dead + "x",
      ours,
      ours + "-" + dead,
  };
  for (const std::string& name : kept) testing::write_bytes(dir.file(name), "x");
  testing::write_bytes(dir.file(ours + dead), "x");
  saving::remove_stale_temporaries(dir.file("ckpt.h5"));
  EXPECT_EQ(sorted(dir.listing()), sorted(kept));
}

TEST(SaveTemporaries, AMissingDirectoryIsNotAnError) {
  EXPECT_NO_THROW(saving::remove_stale_temporaries("/nonexistent-kestrel-dir/ckpt.h5"));
}

TEST(SaveTemporaries, ASaveRemovesThoseOfItsPathOnly) {
  clear_session();
  ScratchDir dir;
  testing::TestNet net;
  net.build({2, 4});
  const std::string stale = "ckpt.weights.h5.tmp-" + io::host_name() + "-" + std::to_string(dead_pid());
  testing::write_bytes(dir.file(stale), "half a file");
  testing::write_bytes(dir.file("other.h5.tmp-" + io::host_name() + "-1"), "x");
  net.save_weights(dir.file("ckpt.weights.h5"));
  EXPECT_EQ(sorted(dir.listing()), sorted({"ckpt.weights.h5", "other.h5.tmp-" + io::host_name() + "-1"}));
}

// Each save's clean-up runs while the other process may be writing: it must leave that one's
// temporary alone, or the other save fails when it syncs or renames it.
TEST(SaveTemporaries, TwoProcessesSavingOnePathKeepEachOthersTemporary) {
  clear_session();
  ScratchDir dir;
  testing::TestNet net;
  net.build({2, 4});
  const std::string path = dir.file("ckpt.h5");
  std::vector<pid_t> savers;
  for (int n = 0; n < 2; ++n) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      try {
        for (int i = 0; i < 25; ++i) net.save_weights(path);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    savers.push_back(pid);
  }
  for (const pid_t pid : savers) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a save failed (wait status " << status << ")";
  }
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"ckpt.h5"});
  testing::TestNet loaded;
  loaded.build({2, 4});
  loaded.load_weights(path);
  testing::expect_same_weights(net, loaded);
}

}  // namespace
}  // namespace kestrel
