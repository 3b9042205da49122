// TFRecordDataset: the records of TFRecord files as a Dataset, as tf.data.TFRecordDataset.
//
//   auto train = data::TFRecordDataset({"train-0.tfrecord.gz", "train-1.tfrecord.gz"})  // {"record": string[]}
//                    .map(data::parse_example_fn(spec))
//                    .shuffle(10000, /*seed=*/42)
//                    .batch(64);
//
//   auto tolerant = data::TFRecordDataset(files).ignore_errors();   // skips corrupt records
//   tolerant.ignored_errors();                                       // how many were skipped
//
// Each element is {"record": a Strings scalar holding one record's bytes}. Files are read in order,
// opened lazily at each pass (so every epoch reads them again) and streamed, never loaded whole.
// A missing file, a corrupt record (CRC mismatch) or a truncated file raises IOError naming the
// file and the record's offset; iteration can go on after it: past a corrupt record to the next
// one, past a truncated or unreadable file to the next file — which is what ignore_errors() does.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "framework/data/dataset.h"

namespace kestrel::data {

struct TFRecordOptions {
  /// "auto" (detect from each file's first bytes), "" or "NONE", "GZIP", "ZLIB" (any letter case).
  std::string compression_type = "auto";
  /// Bytes read from a file at a time.
  std::size_t buffer_size = 256 * 1024;
};

/// The records of the files, in order; throws ValueError for an unknown compression_type or no files.
// NOLINTNEXTLINE(readability-identifier-naming): tf.data's name
Dataset TFRecordDataset(std::vector<std::string> filenames, TFRecordOptions options = {});

}  // namespace kestrel::data
