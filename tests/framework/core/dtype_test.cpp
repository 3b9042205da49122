// DType names and sizes, and bfloat16 rounding.
#include "framework/core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "framework/core/error.h"

namespace kestrel {
namespace {

constexpr DType kAllDTypes[] = {DType::float32, DType::bfloat16, DType::int32, DType::int64, DType::bool_};

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(DType, SizeOfMatchesTheCxxType) {
  EXPECT_EQ(size_of(DType::float32), sizeof(float));
  EXPECT_EQ(size_of(DType::bfloat16), 2u);
  EXPECT_EQ(size_of(DType::bfloat16), sizeof(bfloat16));
  EXPECT_EQ(size_of(DType::int32), sizeof(std::int32_t));
  EXPECT_EQ(size_of(DType::int64), sizeof(std::int64_t));
  EXPECT_EQ(size_of(DType::bool_), sizeof(bool));
}

TEST(DType, ToStringUsesKerasNames) {
  EXPECT_EQ(to_string(DType::float32), "float32");
  EXPECT_EQ(to_string(DType::bfloat16), "bfloat16");
  EXPECT_EQ(to_string(DType::int32), "int32");
  EXPECT_EQ(to_string(DType::int64), "int64");
  EXPECT_EQ(to_string(DType::bool_), "bool");
}

TEST(DType, FromStringRoundTripsEveryDType) {
  for (DType d : kAllDTypes) EXPECT_EQ(dtype_from_string(to_string(d)), d) << to_string(d);
}

TEST(DType, FromStringRejectsAnUnknownNameAndNamesIt) {
  try {
    dtype_from_string("float16");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'float16'"), std::string::npos) << what;
    EXPECT_NE(what.find("bfloat16"), std::string::npos) << "the message should list the valid names: " << what;
  }
}

TEST(DType, FromStringIsCaseSensitiveAndRejectsEmpty) {
  EXPECT_THROW(dtype_from_string("Float32"), ValueError);
  EXPECT_THROW(dtype_from_string(""), ValueError);
  EXPECT_THROW(dtype_from_string("float32 "), ValueError);
}

TEST(DType, FloatingAndIntegerClassification) {
  EXPECT_TRUE(is_floating(DType::float32));
  EXPECT_TRUE(is_floating(DType::bfloat16));
  EXPECT_FALSE(is_floating(DType::int32));
  EXPECT_FALSE(is_floating(DType::int64));
  EXPECT_FALSE(is_floating(DType::bool_));
  EXPECT_TRUE(is_integer(DType::int32));
  EXPECT_TRUE(is_integer(DType::int64));
  EXPECT_FALSE(is_integer(DType::float32));
  EXPECT_FALSE(is_integer(DType::bfloat16));
  EXPECT_FALSE(is_integer(DType::bool_));
}

TEST(DType, DTypeOfMapsCxxTypes) {
  static_assert(dtype_of<float>() == DType::float32);
  static_assert(dtype_of<bfloat16>() == DType::bfloat16);
  static_assert(dtype_of<std::int32_t>() == DType::int32);
  static_assert(dtype_of<std::int64_t>() == DType::int64);
  static_assert(dtype_of<bool>() == DType::bool_);
  SUCCEED();
}

TEST(DType, VisitDTypeCallsWithTheMatchingCxxType) {
  for (DType d : kAllDTypes) {
    DType seen = visit_dtype(d, [](auto tag) { return dtype_of<decltype(tag)>(); });
    EXPECT_EQ(seen, d) << to_string(d);
  }
}

TEST(BFloat16, DefaultIsPositiveZero) {
  bfloat16 h;
  EXPECT_EQ(h.bits, 0u);
  EXPECT_EQ(static_cast<float>(h), 0.0f);
}

TEST(BFloat16, KeepsTheTopSixteenBitsOfExactValues) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80u);
  EXPECT_EQ(bfloat16(-2.0f).bits, 0xc000u);
  EXPECT_EQ(bfloat16(0.0f).bits, 0x0000u);
  EXPECT_EQ(bfloat16(-0.0f).bits, 0x8000u);
}

TEST(BFloat16, RoundsTiesToEven) {
  // 1 + 2^-8 is halfway between 1.0 and 1 + 2^-7; the even neighbour is 1.0.
  EXPECT_EQ(static_cast<float>(bfloat16(1.00390625f)), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6; the even neighbour is 1 + 2^-6.
  EXPECT_EQ(static_cast<float>(bfloat16(1.01171875f)), 1.015625f);
  EXPECT_EQ(static_cast<float>(bfloat16(-1.00390625f)), -1.0f);
  EXPECT_EQ(static_cast<float>(bfloat16(-1.01171875f)), -1.015625f);
}

TEST(BFloat16, RoundsToNearestAwayFromTies) {
  // Just above the halfway point rounds up, just below rounds down.
  EXPECT_EQ(bfloat16(float_from_bits(0x3f808001u)).bits, 0x3f81u);
  EXPECT_EQ(bfloat16(float_from_bits(0x3f807fffu)).bits, 0x3f80u);
  EXPECT_EQ(static_cast<float>(bfloat16(3.14159f)), 3.140625f);
}

TEST(BFloat16, RoundingCarriesIntoTheExponent) {
  // The largest float below 2 rounds up to 2.
  EXPECT_EQ(static_cast<float>(bfloat16(float_from_bits(0x3fffffffu))), 2.0f);
}

TEST(BFloat16, ValuesBeyondTheLargestBFloat16RoundToInfinity) {
  EXPECT_TRUE(std::isinf(static_cast<float>(bfloat16(std::numeric_limits<float>::max()))));
  EXPECT_GT(static_cast<float>(bfloat16(std::numeric_limits<float>::max())), 0.0f);
}

TEST(BFloat16, NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(-std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lives only in the low 16 bits must not truncate to infinity.
  float low_payload_nan = float_from_bits(0x7f800001u);
  ASSERT_TRUE(std::isnan(low_payload_nan));
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(low_payload_nan))));
  // A NaN with an all-ones mantissa must not round over into the next exponent.
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(float_from_bits(0x7fffffffu)))));
}

TEST(BFloat16, InfinityStaysInfinity) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(static_cast<float>(bfloat16(inf)), inf);
  EXPECT_EQ(static_cast<float>(bfloat16(-inf)), -inf);
}

TEST(BFloat16, RoundTripIsExactForEveryRepresentableFiniteValue) {
  // Every bit pattern that is not a NaN: float -> bfloat16 -> float must give the value back.
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    auto bits = static_cast<std::uint16_t>(b);
    float f = bfloat16::from_bits(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(bfloat16(f).bits, bits) << "bit pattern 0x" << std::hex << b;
  }
}

TEST(BFloat16, SubnormalsRoundToNearestEven) {
  // The smallest positive float32 subnormal is far below bfloat16's half-ulp there: it rounds to +0.
  EXPECT_EQ(bfloat16(float_from_bits(0x00000001u)).bits, 0x0000u);
  // Halfway between bfloat16 subnormals 0x0001 and 0x0002 goes to the even one.
  EXPECT_EQ(bfloat16(float_from_bits(0x00018000u)).bits, 0x0002u);
}

TEST(BFloat16, FromBitsSetsTheStorage) {
  EXPECT_EQ(bfloat16::from_bits(0x4049u).bits, 0x4049u);
  EXPECT_EQ(static_cast<float>(bfloat16::from_bits(0x4049u)), 3.140625f);
}

}  // namespace
}  // namespace kestrel
