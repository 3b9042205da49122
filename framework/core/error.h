// Errors raised by Kestrel's public API.
//
//   try { ops::matmul(a, b); }
//   catch (const kestrel::ShapeError& e) { std::cerr << e.what(); }
//   // [matmul] a is [32,784], b is [512,256]: inner dims differ (784 vs 512)
//
// Every message starts with the op, layer or file it concerns and says what would be right.
// Internal invariants use KESTREL_DCHECK instead: user input never aborts the process.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel {

/// Base class of every error Kestrel throws on bad input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value is out of its allowed range (a rate outside [0,1), an unknown option).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// Shapes do not fit together (matmul inner dims, broadcasting, reshape sizes).
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// A tensor has the wrong dtype for an op.
class TypeError : public Error {
 public:
  using Error::Error;
};

/// An index (gather, one_hot, slice) is out of range.
class IndexError : public Error {
 public:
  using Error::Error;
};

/// A file cannot be read or written, or its contents are corrupt.
class IOError : public Error {
 public:
  using Error::Error;
};

/// A step traced for jit_compile breaks one of the rules a compiled program lives by (reading a
/// traced value in host code, an output shape that depends on data); the message names the rule,
/// the op and layer, and the fix.
class JitError : public Error {
 public:
  using Error::Error;
};

/// A compiled program needs more memory than its (simulated) device has, as XLA's
/// RESOURCE_EXHAUSTED on a TPU core; the message gives the figures and what to shrink.
class ResourceExhaustedError : public Error {
 public:
  using Error::Error;
};

/// Builds "[op] message", the prefix every op error carries.
std::string op_message(std::string_view op, std::string_view message);

/// "'name'": a file or other name as an error message quotes it.
std::string in_quotes(const std::string& name);
/// "'a', 'b'": names an error message lists.
std::string in_quotes(const std::vector<std::string>& names);

}  // namespace kestrel

#ifdef NDEBUG
#define KESTREL_DCHECK(cond) ((void)0)
#else
#define KESTREL_DCHECK(cond) ((cond) ? (void)0 : ::kestrel::detail::dcheck_failed(#cond, __FILE__, __LINE__))
namespace kestrel::detail {
[[noreturn]] void dcheck_failed(const char* cond, const char* file, int line);
}
#endif
