// Error hierarchy and the "[op] message" prefix.
#include "framework/core/error.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace kestrel {
namespace {

TEST(OpMessage, PrefixesTheOpInBrackets) {
  EXPECT_EQ(op_message("matmul", "inner dims differ"), "[matmul] inner dims differ");
}

TEST(OpMessage, KeepsAnEmptyMessageAfterThePrefix) { EXPECT_EQ(op_message("sum", ""), "[sum] "); }

TEST(OpMessage, AcceptsDottedOpNames) {
  EXPECT_EQ(op_message("random.uniform", "maxval must exceed minval"), "[random.uniform] maxval must exceed minval");
}

TEST(ErrorHierarchy, EveryErrorClassDerivesFromKestrelError) {
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  static_assert(std::is_base_of_v<Error, ValueError>);
  static_assert(std::is_base_of_v<Error, ShapeError>);
  static_assert(std::is_base_of_v<Error, TypeError>);
  static_assert(std::is_base_of_v<Error, IndexError>);
  static_assert(std::is_base_of_v<Error, IOError>);
  SUCCEED();
}

template <class E>
void expect_caught_as_kestrel_error() {
  try {
    throw E(op_message("op", "what went wrong"));
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[op] what went wrong");
    EXPECT_NE(dynamic_cast<const E*>(&e), nullptr);
    return;
  }
  ADD_FAILURE() << "the error was not caught as kestrel::Error";
}

TEST(ErrorHierarchy, EveryErrorClassIsCaughtAsKestrelErrorWithItsMessage) {
  expect_caught_as_kestrel_error<ValueError>();
  expect_caught_as_kestrel_error<ShapeError>();
  expect_caught_as_kestrel_error<TypeError>();
  expect_caught_as_kestrel_error<IndexError>();
  expect_caught_as_kestrel_error<IOError>();
}

TEST(ErrorHierarchy, SiblingErrorClassesAreDistinct) {
  EXPECT_THROW(
      {
        try {
          throw ShapeError("shape");
        } catch (const ValueError&) {
          FAIL() << "a ShapeError must not be caught as a ValueError";
        }
      },
      ShapeError);
}

}  // namespace
}  // namespace kestrel
