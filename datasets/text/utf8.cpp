#include "datasets/text/utf8.h"

#include <cstdint>
#include <cstdio>

#include "framework/core/error.h"

namespace kestrel::text::utf8 {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

// The valid range of the second byte depends on the lead byte (this is what rules out overlong
// forms, surrogates and code points past U+10FFFF); every later byte is 80..BF.
struct LeadInfo {
  int length = 0;  // 0: not a lead byte
  std::uint8_t second_lo = 0x80, second_hi = 0xBF;
};

LeadInfo lead_info(std::uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {};
}

// Decodes the sequence at bytes[i]. Returns the number of bytes consumed and sets `valid`; an
// invalid sequence consumes its maximal subpart (at least one byte).
std::size_t decode_one(std::string_view bytes, std::size_t i, char32_t& cp, bool& valid) {
  const auto b0 = static_cast<std::uint8_t>(bytes[i]);
  if (b0 < 0x80) {
    cp = b0;
    valid = true;
    return 1;
  }
  const LeadInfo info = lead_info(b0);
  valid = false;
  if (info.length == 0) return 1;
  char32_t value = b0 & (info.length == 2 ? 0x1F : info.length == 3 ? 0x0F : 0x07);
  for (int k = 1; k < info.length; ++k) {
    if (i + static_cast<std::size_t>(k) >= bytes.size()) return static_cast<std::size_t>(k);
    const auto b = static_cast<std::uint8_t>(bytes[i + static_cast<std::size_t>(k)]);
    const std::uint8_t lo = k == 1 ? info.second_lo : 0x80;
    const std::uint8_t hi = k == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) return static_cast<std::size_t>(k);
    value = (value << 6) | (b & 0x3F);
  }
  cp = value;
  valid = true;
  return static_cast<std::size_t>(info.length);
}

[[noreturn]] void throw_invalid(std::string_view bytes, std::size_t offset, std::size_t length,
                                std::string_view context) {
  std::string shown;
  for (std::size_t k = 0; k < length; ++k) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%s0x%02X", k ? " " : "",
                  static_cast<unsigned>(static_cast<std::uint8_t>(bytes[offset + k])));
    shown += hex;
  }
  throw ValueError(std::string(context) + " invalid UTF-8 at byte offset " + std::to_string(offset) + " (" + shown +
                   "); fix the input's encoding, or choose InvalidUtf8::replace to replace invalid bytes "
                   "with U+FFFD");
}

}  // namespace

void decode_into(std::string_view bytes, InvalidUtf8 policy, std::string_view context, std::u32string& out) {
  out.clear();
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    // ASCII runs dominate most text: copy them without the general decoder.
    const auto b = static_cast<std::uint8_t>(bytes[i]);
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    char32_t cp = 0;
    bool valid = false;
    const std::size_t used = decode_one(bytes, i, cp, valid);
    if (!valid) {
      if (policy == InvalidUtf8::error) throw_invalid(bytes, i, used, context);
      cp = kReplacement;
    }
    out.push_back(cp);
    i += used;
  }
}

std::u32string decode(std::string_view bytes, InvalidUtf8 policy, std::string_view context) {
  std::u32string out;
  decode_into(bytes, policy, context, out);
  return out;
}

std::size_t find_invalid(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    char32_t cp = 0;
    bool valid = false;
    const std::size_t used = decode_one(bytes, i, cp, valid);
    if (!valid) return i;
    i += used;
  }
  return std::string_view::npos;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void encode_into(std::u32string_view cps, std::string& out) {
  out.clear();
  out.reserve(cps.size());
  for (char32_t cp : cps) append(out, cp);
}

std::string encode(std::u32string_view cps) {
  std::string out;
  encode_into(cps, out);
  return out;
}

}  // namespace kestrel::text::utf8
