#include "framework/io/protobuf_wire.h"

#include <bit>

namespace kestrel::io {

void append_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80u) {
    out.push_back(static_cast<char>((value & 0x7fu) | 0x80u));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void append_key(std::string& out, int field, WireType type) {
  append_varint(out, (static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(type));
}

void append_fixed32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

void append_fixed64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

ProtoWriter& ProtoWriter::add_uint64(int field, std::uint64_t value) {
  append_key(bytes_, field, WireType::varint);
  append_varint(bytes_, value);
  return *this;
}

ProtoWriter& ProtoWriter::add_int64(int field, std::int64_t value) {
  return add_uint64(field, static_cast<std::uint64_t>(value));
}

ProtoWriter& ProtoWriter::add_sint64(int field, std::int64_t value) {
  const auto u = static_cast<std::uint64_t>(value);
  return add_uint64(field, (u << 1) ^ (value < 0 ? ~std::uint64_t{0} : std::uint64_t{0}));
}

ProtoWriter& ProtoWriter::add_bool(int field, bool value) { return add_uint64(field, value ? 1 : 0); }

ProtoWriter& ProtoWriter::add_double(int field, double value) {
  return add_fixed64(field, std::bit_cast<std::uint64_t>(value));
}

ProtoWriter& ProtoWriter::add_float(int field, float value) {
  return add_fixed32(field, std::bit_cast<std::uint32_t>(value));
}

ProtoWriter& ProtoWriter::add_fixed32(int field, std::uint32_t value) {
  append_key(bytes_, field, WireType::fixed32);
  append_fixed32(bytes_, value);
  return *this;
}

ProtoWriter& ProtoWriter::add_fixed64(int field, std::uint64_t value) {
  append_key(bytes_, field, WireType::fixed64);
  append_fixed64(bytes_, value);
  return *this;
}

ProtoWriter& ProtoWriter::add_bytes(int field, std::string_view value) {
  append_key(bytes_, field, WireType::length_delimited);
  append_varint(bytes_, value.size());
  bytes_.append(value);
  return *this;
}

ProtoWriter& ProtoWriter::add_packed_floats(int field, std::span<const float> values) {
  if (values.empty()) return *this;
  append_key(bytes_, field, WireType::length_delimited);
  append_varint(bytes_, values.size() * 4);
  for (float v : values) append_fixed32(bytes_, std::bit_cast<std::uint32_t>(v));
  return *this;
}

ProtoWriter& ProtoWriter::add_packed_int64s(int field, std::span<const std::int64_t> values) {
  if (values.empty()) return *this;
  std::string payload;
  for (std::int64_t v : values) append_varint(payload, static_cast<std::uint64_t>(v));
  return add_bytes(field, payload);
}

}  // namespace kestrel::io
