#include "framework/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace kestrel {

std::string op_message(std::string_view op, std::string_view message) {
  std::string out;
  out.reserve(op.size() + message.size() + 3);
  out += '[';
  out += op;
  out += "] ";
  out += message;
  return out;
}

#ifndef NDEBUG
namespace detail {
void dcheck_failed(const char* cond, const char* file, int line) {
  // An internal invariant broke: this is a Kestrel bug, not bad user input.
  std::fprintf(stderr, "kestrel internal check failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}
}  // namespace detail
#endif

std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

std::string in_quotes(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + in_quotes(name);
  return out;
}

}  // namespace kestrel
