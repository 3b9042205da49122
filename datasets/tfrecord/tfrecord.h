// TFRecord files and tf.train.Example in one include: writer, dataset, Example codec, parsing.
//
//   #include "datasets/tfrecord/tfrecord.h"
//   data::TFRecordWriter writer("train.tfrecord.gz", {.compression_type = "GZIP"});
//   writer.write(data::serialize_example({{"input_ids", ids}, {"label", label}}));
//   writer.close();
//
//   data::FeatureSpec spec{{"input_ids", data::FixedLenFeature{.shape = {128}, .dtype = data::FeatureDType::int64}},
//                          {"label", data::FixedLenFeature{.shape = {}, .dtype = data::FeatureDType::int64}}};
//   auto train = data::TFRecordDataset({"train.tfrecord.gz"}).map(data::parse_example_fn(spec)).batch(32);
//
// The framing itself (io::RecordReader, io::RecordWriter) lives in framework/io.
#pragma once

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/example_json.h"
#include "datasets/tfrecord/feature_spec.h"
#include "datasets/tfrecord/parse_example.h"
#include "datasets/tfrecord/tfrecord_dataset.h"
#include "datasets/tfrecord/tfrecord_writer.h"
