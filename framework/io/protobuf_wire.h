// A protobuf wire-format writer: enough to emit TensorBoard events and tf.train.Example records
// without generated code.
//
//   io::ProtoWriter value;
//   value.add_string(1, "epoch_loss").add_float(2, 0.25f);     // Summary.Value{tag, simple_value}
//   io::ProtoWriter summary;
//   summary.add_message(1, value);                              // Summary{repeated Value value = 1}
//   io::ProtoWriter event;
//   event.add_double(1, wall_time).add_int64(2, step).add_message(5, summary);
//   writer.write(event.bytes());
//
// Fields are written in call order; call in ascending field number to get the bytes protobuf's
// own serializer would produce. Scalars are always written (proto3 leaves out default values, so
// callers that want identical bytes leave those calls out); empty packed lists write nothing, as
// protobuf does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kestrel::io {

/// The wire type in the low three bits of a field key.
enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

/// Appends value as a base-128 varint (1 to 10 bytes).
void append_varint(std::string& out, std::uint64_t value);
/// Appends a field key: (field << 3) | wire type.
void append_key(std::string& out, int field, WireType type);
/// Appends value as 4 little-endian bytes.
void append_fixed32(std::string& out, std::uint32_t value);
/// Appends value as 8 little-endian bytes.
void append_fixed64(std::string& out, std::uint64_t value);

class ProtoWriter {
 public:
  /// uint32, uint64, enum: a varint.
  ProtoWriter& add_uint64(int field, std::uint64_t value);
  /// int32, int64: two's complement in a varint (negative values take 10 bytes, as in protobuf).
  ProtoWriter& add_int64(int field, std::int64_t value);
  /// sint32, sint64: zigzag-encoded varint.
  ProtoWriter& add_sint64(int field, std::int64_t value);
  ProtoWriter& add_bool(int field, bool value);
  /// double: fixed64.
  ProtoWriter& add_double(int field, double value);
  /// float: fixed32.
  ProtoWriter& add_float(int field, float value);
  ProtoWriter& add_fixed32(int field, std::uint32_t value);
  ProtoWriter& add_fixed64(int field, std::uint64_t value);
  /// string and bytes: length-delimited.
  ProtoWriter& add_bytes(int field, std::string_view value);
  ProtoWriter& add_string(int field, std::string_view value) { return add_bytes(field, value); }
  /// An embedded message: length-delimited.
  ProtoWriter& add_message(int field, const ProtoWriter& message) { return add_bytes(field, message.bytes()); }
  /// repeated float, packed (FloatList.value); nothing when empty.
  ProtoWriter& add_packed_floats(int field, std::span<const float> values);
  /// repeated int64, packed (Int64List.value); nothing when empty.
  ProtoWriter& add_packed_int64s(int field, std::span<const std::int64_t> values);

  /// The serialized message so far.
  const std::string& bytes() const { return bytes_; }
  /// Moves the serialized message out, leaving this writer empty.
  std::string release() { return std::move(bytes_); }
  void clear() { bytes_.clear(); }

 private:
  std::string bytes_;
};

}  // namespace kestrel::io
