// Test support: catching an error to check its message.
//
//   std::string m = error_message<ShapeError>([] { ops::matmul(a, b); });
//   EXPECT_TRUE(contains(m, "[matmul]"));
#pragma once

#include <gtest/gtest.h>

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

}  // namespace kestrel::testing
