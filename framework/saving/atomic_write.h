// An atomic file save: write a temporary beside the path, sync it, rename it over the path. A crash
// at any point leaves the previous file whole; the next save of the path removes the temporaries
// that killed processes left (save_temporaries.h). Weight files and .keras model files save so.
//
//   saving::write_atomically("ckpt.weights.h5", [&](const std::string& temporary) {
//     write_hdf5(temporary);                        // any writer of a complete file
//   });
#pragma once

#include <functional>
#include <string>

namespace kestrel::saving {

/// Runs `write` on the temporary path, then makes its file the one at `path`. Saves run one at a
/// time in a process. An exception from `write` or the file system removes the temporary and
/// leaves `path` as it was.
void write_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write);

}  // namespace kestrel::saving
