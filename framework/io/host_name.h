// The machine's name, for files that several machines may write into one shared directory
// (TensorBoard event files, the temporaries of a weight-file save).
//
//   std::string name = io::host_name();   // "worker-3", or "localhost" when the system has none
#pragma once

#include <string>

namespace kestrel::io {

/// gethostname(), with any '/' replaced by '_' so that it is one file-name component.
std::string host_name();

}  // namespace kestrel::io
