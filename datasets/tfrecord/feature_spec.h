// What parse_example extracts from a tf.train.Example: one entry per feature, as tf.io's
// FixedLenFeature and VarLenFeature.
//
//   data::FeatureSpec spec{
//       {"input_ids", data::FixedLenFeature{.shape = {128}, .dtype = data::FeatureDType::int64}},
//       {"label", data::FixedLenFeature{.shape = {}, .dtype = data::FeatureDType::int64,
//                                       .default_value = Tensor::scalar(0, DType::int64)}},
//       {"tags", data::VarLenFeature{.dtype = data::FeatureDType::string}},
//   };
//   data::element_spec(spec);   // {input_ids: int64[128], label: int64[], tags: string[-1]}
//
// A FixedLenFeature gives a tensor of exactly its shape (the feature must hold that many values,
// in row-major order). A VarLenFeature gives a dense 1-D tensor of whatever count the record holds
// (tf.io gives a SparseTensor here; Kestrel has no sparse tensors, and a 1-D list is what a sparse
// tensor of one record densifies to) — an absent VarLenFeature gives an empty one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "framework/data/element.h"

namespace kestrel::data {

/// The value types a tf.train.Feature holds: Int64List, FloatList and BytesList (tf.string).
enum class FeatureDType { int64, float32, string };

/// "int64", "float32" or "string".
std::string to_string(FeatureDType dtype);

/// A feature with a fixed number of values, reshaped to `shape` (tf.io.FixedLenFeature).
struct FixedLenFeature {
  /// The shape of the value; {} for a scalar. Every dimension must be known (>= 0).
  std::vector<std::int64_t> shape;
  FeatureDType dtype = FeatureDType::float32;
  /// Used when a record lacks the feature: a Tensor (int64/float32 features) or Strings (string
  /// features) with one value, broadcast to shape, or with exactly the shape's number of values.
  /// Without it, a missing feature is an error.
  std::optional<Value> default_value;
};

/// A feature with any number of values, as a dense 1-D tensor (tf.io.VarLenFeature; see above).
struct VarLenFeature {
  FeatureDType dtype = FeatureDType::float32;
};

using FeatureConfig = std::variant<FixedLenFeature, VarLenFeature>;
/// Feature name -> how to parse it.
using FeatureSpec = std::map<std::string, FeatureConfig>;

/// The element spec that parse_example produces for this spec (for MapOptions::output_spec).
ElementSpec element_spec(const FeatureSpec& spec);

/// Checks shapes and default values; throws ValueError naming the feature and the fix.
void validate_feature_spec(const FeatureSpec& spec);

}  // namespace kestrel::data
