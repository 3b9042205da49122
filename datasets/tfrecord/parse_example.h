// parse_example: a serialized tf.train.Example to a data::Element, as tf.io.parse_single_example.
//
//   data::FeatureSpec spec{
//       {"input_ids", data::FixedLenFeature{.shape = {128}, .dtype = data::FeatureDType::int64}},
//       {"label", data::FixedLenFeature{.shape = {}, .dtype = data::FeatureDType::int64}},
//   };
//   auto train = data::TFRecordDataset({"train.tfrecord"})           // {"record": string[]}
//                    .map(data::parse_example_fn(spec))               // {input_ids: int64[128], label: int64[]}
//                    .batch(32);
//
//   data::Element e = data::parse_example(record_bytes, spec);       // one record by hand
//
// The element holds exactly the features of the spec (see feature_spec.h for what each gives);
// features of the record that the spec does not name are ignored. A missing required feature, a
// feature of another type, or a FixedLenFeature with the wrong number of values raises ValueError
// naming the feature and the fix; under Dataset::ignore_errors() such records are skipped.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "datasets/tfrecord/feature_spec.h"
#include "framework/data/element.h"

namespace kestrel::data {

/// One value per feature of spec, from one serialized Example; throws ValueError as described above.
Element parse_example(std::string_view serialized, const FeatureSpec& spec);

/// A function for Dataset::map that parses the Strings scalar under record_key (TFRecordDataset's
/// "record"). The spec is checked once, here, so a bad spec fails before the pipeline runs.
std::function<Element(Element)> parse_example_fn(FeatureSpec spec, std::string record_key = "record");

}  // namespace kestrel::data
