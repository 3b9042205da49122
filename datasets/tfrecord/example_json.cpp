#include "datasets/tfrecord/example_json.h"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "framework/core/error.h"

namespace kestrel::data {
namespace {

using Json = nlohmann::json;

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const std::uint32_t v = std::uint32_t{static_cast<unsigned char>(in[i])} << 16 |
                            std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8 |
                            static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kBase64Alphabet[(v >> s) & 63u]);
  }
  const std::size_t rest = in.size() - i;
  if (rest > 0) {
    std::uint32_t v = std::uint32_t{static_cast<unsigned char>(in[i])} << 16;
    if (rest == 2) v |= std::uint32_t{static_cast<unsigned char>(in[i + 1])} << 8;
    out.push_back(kBase64Alphabet[(v >> 18) & 63u]);
    out.push_back(kBase64Alphabet[(v >> 12) & 63u]);
    out.push_back(rest == 2 ? kBase64Alphabet[(v >> 6) & 63u] : '=');
    out.push_back('=');
  }
  return out;
}

// Standard base64 with padding; nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::array<int, 256> value{};
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(kBase64Alphabet[k])] = k;
  std::string out;
  for (std::size_t i = 0; i < in.size(); i += 4) {
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int d = value[static_cast<unsigned char>(c)];
      if (d < 0 || pad > 0) return std::nullopt;
      v = v << 6 | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xffu));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xffu));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xffu));
  }
  return out;
}

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF), as JSON requires.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + static_cast<std::size_t>(extra) >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto t = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if ((t & 0xc0u) != 0x80u) return false;
      cp = cp << 6 | (t & 0x3fu);
    }
    if ((extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (extra == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;
    }
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

Json bytes_json(const std::string& bytes) {
  if (valid_utf8(bytes)) return bytes;
  return Json{{"base64", base64_encode(bytes)}};
}

Json float_json(float f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  // The shortest decimal that reads back as this float, held as the double of that decimal, so
  // the JSON shows 0.1 rather than 0.10000000149011612.
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  double d = 0;
  std::from_chars(buf, r.ptr, d);
  return d;
}

[[noreturn]] void fail(const std::string& feature, const std::string& problem) {
  throw ValueError("feature '" + feature + "': " + problem);
}

float json_float(const std::string& feature, const Json& v) {
  if (v.is_number()) return static_cast<float>(v.get<double>());
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<float>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<float>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<float>::infinity();
  }
  fail(feature, "float_list values must be numbers (or \"NaN\", \"Infinity\", \"-Infinity\"), not " + v.dump());
}

std::int64_t json_int64(const std::string& feature, const Json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(feature, "int64_list value " + v.dump() + " does not fit in int64");
    }
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  fail(feature, "int64_list values must be integers, not " + v.dump());
}

std::string json_bytes(const std::string& feature, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.size() == 1 && v.contains("base64") && v["base64"].is_string()) {
    if (auto bytes = base64_decode(v["base64"].get<std::string>())) return *bytes;
    fail(feature, "bytes_list value " + v.dump() + " is not valid standard base64");
  }
  fail(feature, "bytes_list values must be strings or {\"base64\": \"...\"}, not " + v.dump());
}

void fill_feature(const std::string& name, const Json& spec, example::Feature& f) {
  if (!spec.is_object() || spec.size() > 1) {
    fail(name, "expected an object with one key, \"int64_list\", \"float_list\" or \"bytes_list\", not " + spec.dump());
  }
  if (spec.empty()) return;  // a feature with no list set
  // The key and value live in spec itself; a binding to *spec.items().begin() would refer into a
  // temporary iterator.
  const auto entry = spec.begin();
  const std::string& kind = entry.key();
  const Json& values = entry.value();
  if (!values.is_array()) fail(name, "the values of \"" + kind + "\" must be an array, not " + values.dump());
  if (kind == "int64_list") {
    auto* list = f.mutable_int64_list();
    for (const Json& v : values) list->add_value(json_int64(name, v));
  } else if (kind == "float_list") {
    auto* list = f.mutable_float_list();
    for (const Json& v : values) list->add_value(json_float(name, v));
  } else if (kind == "bytes_list") {
    auto* list = f.mutable_bytes_list();
    for (const Json& v : values) list->add_value(json_bytes(name, v));
  } else {
    fail(name, "unknown list \"" + kind + "\"; use \"int64_list\", \"float_list\" or \"bytes_list\"");
  }
}

}  // namespace

std::string example_to_json(const example::Example& example) {
  Json out = Json::object();
  for (const auto& [name, f] : example.features().feature()) {
    Json& slot = out[name];
    switch (f.kind_case()) {
      case example::Feature::kInt64List: {
        Json values = Json::array();
        for (std::int64_t v : f.int64_list().value()) values.push_back(v);
        slot = Json{{"int64_list", std::move(values)}};
        break;
      }
      case example::Feature::kFloatList: {
        Json values = Json::array();
        for (float v : f.float_list().value()) values.push_back(float_json(v));
        slot = Json{{"float_list", std::move(values)}};
        break;
      }
      case example::Feature::kBytesList: {
        Json values = Json::array();
        for (const std::string& v : f.bytes_list().value()) values.push_back(bytes_json(v));
        slot = Json{{"bytes_list", std::move(values)}};
        break;
      }
      case example::Feature::KIND_NOT_SET: slot = Json::object(); break;
    }
  }
  return out.dump();
}

example::Example example_from_json(std::string_view json) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::exception& e) {
    // parse_error, and out_of_range for a number past double's range such as 1e999.
    throw ValueError(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw ValueError("expected a JSON object of features, not " + doc.dump());
  example::Example ex;
  auto& features = *ex.mutable_features()->mutable_feature();
  for (const auto& [name, spec] : doc.items()) fill_feature(name, spec, features[name]);
  return ex;
}

std::string bytes_to_json(std::string_view bytes) { return bytes_json(std::string(bytes)).dump(); }

}  // namespace kestrel::data
