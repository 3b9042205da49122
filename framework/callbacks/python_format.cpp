#include "framework/callbacks/python_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace kestrel::callbacks::detail {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form ("-1.2345e-05"), then laid out as Python does.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(end - buf));
  const bool negative = !sci.empty() && sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  const std::size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits.push_back(c);
  }
  const int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());

  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const auto int_len = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  out += exponent < 0 ? "e-" : "e+";
  const int magnitude = std::abs(exponent);
  if (magnitude < 10) out += '0';
  out += std::to_string(magnitude);
  return out;
}

namespace {

std::string format_field(std::string_view pattern, const std::string& name, const std::string& spec,
                         const FormatValue& value) {
  const char type = spec.empty() ? '\0' : spec.back();
  const bool float_type = type != '\0' && std::string_view("eEfFgG%").find(type) != std::string_view::npos;
  const bool int_type = type != '\0' && std::string_view("dxXob").find(type) != std::string_view::npos;
  try {
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      if (!float_type) return fmt::format(fmt::runtime("{:" + spec + "}"), *i);
    }
    const double d = std::holds_alternative<double>(value) ? std::get<double>(value)
                                                           : static_cast<double>(std::get<std::int64_t>(value));
    if (int_type) {
      throw ValueError("file name pattern '" + std::string(pattern) + "': field '" + name + "' is a float (" +
                       python_float_repr(d) + "); format code '" + type + "' is for integers");
    }
    if (spec.empty()) return python_float_repr(d);
    // Python's '%' is fixed-point of value * 100 followed by a percent sign.
    if (type == '%') return fmt::format(fmt::runtime("{:" + spec.substr(0, spec.size() - 1) + "f}"), d * 100.0) + "%";
    return fmt::format(fmt::runtime("{:" + spec + "}"), d);
  } catch (const fmt::format_error& e) {
    throw ValueError("file name pattern '" + std::string(pattern) + "': field '" + name + "' has a bad format spec '" +
                     spec + "': " + e.what());
  }
}

}  // namespace

std::string python_format(std::string_view pattern, const std::map<std::string, FormatValue>& values) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw ValueError("file name pattern '" + std::string(pattern) + "': single '}' (write '}}' for a brace)");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const std::size_t close = pattern.find('}', i + 1);
    const std::size_t nested = pattern.find('{', i + 1);
    if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close)) {
      throw ValueError("file name pattern '" + std::string(pattern) + "': unmatched '{' (write '{{' for a brace)");
    }
    const std::string_view field = pattern.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string name(field.substr(0, colon));
    const std::string spec = colon == std::string_view::npos ? std::string() : std::string(field.substr(colon + 1));
    auto found = values.find(name);
    if (found == values.end()) {
      std::string names;
      for (const auto& [key, v] : values) names += (names.empty() ? "" : ", ") + key;
      throw ValueError("file name pattern '" + std::string(pattern) + "': no value named '" + name +
                       "'; available: " + names);
    }
    out += format_field(pattern, name, spec, found->second);
    i = close;
  }
  return out;
}

}  // namespace kestrel::callbacks::detail
