// The steps of a weight-file save at which a crash could lose data, with a seam for tests that
// kill the process at each of them (tests/framework/saving/weights_file_crash_test.cpp):
//
//   saving::detail::set_save_hook([](saving::SaveStep step) {
//     if (step == saving::SaveStep::rename) ::raise(SIGKILL);     // die just before the rename
//   });
//
// Kestrel itself never sets the hook; unset, a step costs one call and one branch.
#pragma once

namespace kestrel::saving {

enum class SaveStep {
  write,   // an attribute or dataset is about to be written to the temporary file
  flush,   // the temporary file is about to be flushed and closed
  sync,    // the closed temporary file is about to be synced to disk
  rename,  // the temporary file is about to replace the file at the path
};

namespace detail {

using SaveHook = void (*)(SaveStep step);

/// Installs hook, called before every step of every save (nullptr removes it); set it only while
/// no save runs.
void set_save_hook(SaveHook hook);

/// Calls the hook, if one is set, before step.
void before_save_step(SaveStep step);

}  // namespace detail
}  // namespace kestrel::saving
