// tf.train.Example to and from data::Element, through the generated protobuf code.
//
//   data::Element e{{"input_ids", Tensor::from_vector<std::int64_t>({101, 7592, 102}, {3})},
//                   {"label", Tensor::scalar(1, DType::int64)},
//                   {"text", data::Strings("hello")}};
//   std::string bytes = data::serialize_example(e);     // one TFRecord's worth
//   data::Element back = data::decode_example(bytes);   // {input_ids: int64[3], label: int64[1], text: string[1]}
//
// Encoding: integer tensors (int64, int32, bool) become an Int64List, float tensors (float32,
// bfloat16) a FloatList, Strings a BytesList; every shape is flattened in row-major order, since
// an Example keeps no shapes (parse_example with a FixedLenFeature restores them). Decoding gives
// each feature as a 1-D int64 tensor, float32 tensor or Strings. Serialization is deterministic
// (features sorted by name), so equal elements give equal bytes.
#pragma once

#include <string>
#include <string_view>

#include "datasets/tfrecord/example.pb.h"
#include "framework/data/element.h"

namespace kestrel::data {

/// The Example holding every value of e, flattened (see above).
example::Example example_from_element(const Element& e);
/// example_from_element(e), serialized with sorted feature names.
std::string serialize_example(const Element& e);
/// Serializes an Example deterministically (features sorted by name).
std::string serialize_example(const example::Example& example);

/// Each feature of the Example as a 1-D value; a feature with no list set gives an empty float32 tensor.
Element element_from_example(const example::Example& example);
/// Parses serialized bytes; throws ValueError when they are not a tf.train.Example.
example::Example parse_example_proto(std::string_view serialized);
/// element_from_example(parse_example_proto(serialized)).
Element decode_example(std::string_view serialized);

}  // namespace kestrel::data
