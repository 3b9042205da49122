// Element types and the bfloat16 storage type.
//
//   DType t = DType::bfloat16;
//   size_of(t);            // 2
//   to_string(t);          // "bfloat16"
//   bfloat16 h(3.14159f);  // stored as the top 16 bits, rounded to nearest even
//   float f = h;           // 3.140625
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace kestrel {

enum class DType : std::uint8_t { float32, bfloat16, int32, int64, bool_ };

/// Bytes per element.
std::size_t size_of(DType dtype);
/// Keras/NumPy name: "float32", "bfloat16", "int32", "int64", "bool".
std::string_view to_string(DType dtype);
/// Parses a name from to_string; throws ValueError for anything else.
DType dtype_from_string(std::string_view name);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

/// Brain floating point: float32's sign and exponent with a 7-bit mantissa.
/// Kestrel stores bf16 and computes in float32, as TPUs do.
struct bfloat16 {
  std::uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float value) : bits(round_to_bits(value)) {}
  operator float() const {
    std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float out;
    std::memcpy(&out, &wide, sizeof out);
    return out;
  }

  static bfloat16 from_bits(std::uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }

 private:
  // Without a branch, so that loops of conversions vectorize.
  static std::uint16_t round_to_bits(float value) {
    std::uint32_t u;
    std::memcpy(&u, &value, sizeof u);
    // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit.
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (u >> 16) | 0x40u;  // keep NaN a NaN
    return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
};

/// Maps a C++ element type to its DType.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <>
constexpr DType dtype_of<bfloat16>() {
  return DType::bfloat16;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::int64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::bool_;
}

/// Calls fn with a default-constructed value of the C++ type for dtype (for dispatching kernels).
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32: return fn(float{});
    case DType::bfloat16: return fn(bfloat16{});
    case DType::int32: return fn(std::int32_t{});
    case DType::int64: return fn(std::int64_t{});
    case DType::bool_: break;
  }
  return fn(bool{});
}

}  // namespace kestrel
