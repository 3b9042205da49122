// Test support: catching an error to check its message.
//
//   std::string m = error_message<ShapeError>([] { ops::matmul(a, b); });
//   EXPECT_TRUE(contains(m, "[matmul]"));
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <string>

namespace kestrel::testing {

/// The message of the E that fn throws; records a failure if it throws nothing or something else.
template <class E>
std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "threw nothing";
  return {};
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// How many times `part` occurs in `text` (overlaps included).
inline std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace kestrel::testing
