#include "framework/io/host_name.h"

#include <unistd.h>

#include <algorithm>

namespace kestrel::io {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  std::string result = name;
  std::replace(result.begin(), result.end(), '/', '_');
  return result;
}

}  // namespace kestrel::io
