// tf.train.Example as one line of JSON, the format of the kestrel-records tool.
//
//   std::string line = data::example_to_json(example);
//   // {"input_ids":{"int64_list":[101,102]},"score":{"float_list":[0.5]},"text":{"bytes_list":["hi",{"base64":"/wAB"}]}}
//   example::Example back = data::example_from_json(line);   // the same Example
//
// The format: one object, a key per feature (sorted by name), each an object with one key naming
// the list ("int64_list", "float_list" or "bytes_list") and its values in an array ({} for a
// feature with no list set). Bytes are a JSON string when they are valid UTF-8, else
// {"base64": "<standard base64>"}. Floats are written in the shortest form that reads back to the
// same float32; NaN and infinities, which JSON lacks, are the strings "NaN", "Infinity", "-Infinity".
// int64 values are exact (JSON integers of any size up to 64 bits).
#pragma once

#include <string>
#include <string_view>

#include "datasets/tfrecord/example.pb.h"

namespace kestrel::data {

/// The Example as one line of JSON (no trailing newline).
std::string example_to_json(const example::Example& example);

/// The Example a line of that JSON describes; throws ValueError naming the feature and the problem.
example::Example example_from_json(std::string_view json);

/// Bytes as a JSON value: a string when valid UTF-8, else {"base64": "..."} (for records that are
/// not Examples).
std::string bytes_to_json(std::string_view bytes);

}  // namespace kestrel::data
