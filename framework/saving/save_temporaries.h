// The temporary file a weight-file save writes before renaming it over the path, and the
// clean-up of temporaries that killed saves left behind.
//
//   const std::string temporary = saving::temporary_path("ckpt.h5");   // "ckpt.h5.tmp-node1-4242"
//   saving::remove_stale_temporaries("ckpt.h5");   // removes "ckpt.h5.tmp-node1-<pid>" of dead pids
//
// The name holds the host and the process id: a pid says whether its process still runs only on
// its own machine, and checkpoints are often written into a directory that several machines share.
#pragma once

#include <string>

namespace kestrel::saving {

/// "<path>.tmp-<host>-<pid>": where this process writes a save of path.
std::string temporary_path(const std::string& path);

/// Removes the temporaries of path that saves on this host left behind, those whose process no
/// longer runs; a temporary of a running process (a save in progress) or of another host is kept.
/// Best effort: what cannot be removed stays, and the save goes on.
void remove_stale_temporaries(const std::string& path);

}  // namespace kestrel::saving
