// TFRecord throughput: writing records, reading them back (framing, both CRCs, decompression),
// and reading + parsing them into tensors, for each compression (none, GZIP, ZLIB; writes also at
// zlib's fastest level 1 beside its default 6).
//
//   ./build/bench/tfrecord_bench                              # every case
//   ./build/bench/tfrecord_bench --records 5000 --repeats 10 --json-out tfrecord.json
//   ./build/bench/tfrecord_bench --filter 'read_parse'
//
// The data is shaped like tokenized text: each Example holds "input_ids" (128 int64 ids drawn
// from a BERT-sized vocabulary of 30522) and "label" (one int64). The records are serialized once
// up front; MB/s counts the serialized record bytes (the uncompressed payload, framing excluded),
// so the three compressions compare on the same work. Files go to the system temp directory,
// which is usually served from the page cache: these are CPU figures, not disk figures. There is
// no peer: Debian ships no TensorFlow to compare with.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/harness.h"
#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/parse_example.h"
#include "datasets/tfrecord/tfrecord_dataset.h"
#include "datasets/tfrecord/tfrecord_writer.h"
#include "framework/core/tensor.h"

namespace {

using kestrel::DType;
using kestrel::Tensor;
using kestrel::bench::Figures;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Timing;
namespace data = kestrel::data;

constexpr std::int64_t kSequenceLength = 128;
constexpr std::int64_t kVocabSize = 30522;

struct Corpus {
  std::vector<data::Element> elements;
  std::vector<std::string> records;
  double bytes = 0;  // serialized record bytes in all
};

Corpus make_corpus(std::int64_t count) {
  Corpus corpus;
  std::mt19937_64 rng(0);
  std::uniform_int_distribution<std::int64_t> token(0, kVocabSize - 1);
  for (std::int64_t i = 0; i < count; ++i) {
    std::vector<std::int64_t> ids(kSequenceLength);
    for (auto& id : ids) id = token(rng);
    corpus.elements.push_back(data::Element{{"input_ids", Tensor::from_vector<std::int64_t>(ids, {kSequenceLength})},
                                            {"label", Tensor::scalar(static_cast<double>(i % 2), DType::int64)}});
    corpus.records.push_back(data::serialize_example(corpus.elements.back()));
    corpus.bytes += static_cast<double>(corpus.records.back().size());
  }
  return corpus;
}

Figures rates(double records, double bytes, const Timing& t) {
  const double seconds = t.median_ms / 1e3;
  return Figures{{"records_per_s", records / seconds}, {"mb_per_s", bytes / 1e6 / seconds}};
}

void write_file(const std::string& path, const std::string& type, const std::vector<std::string>& records,
                int level = -1) {
  data::TFRecordWriter writer(path, {.compression_type = type, .compression_level = level});
  for (const std::string& r : records) writer.write(r);
  writer.close();
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("tfrecord_bench", "TFRecord write, read and read + parse throughput for none, GZIP and ZLIB");
  std::int64_t count = 20000;
  harness.cli().add_option("--records", count, "Examples per file");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  const Corpus corpus = make_corpus(count);
  const auto n = static_cast<double>(count);
  const auto dir = std::filesystem::temp_directory_path() / ("kestrel_tfrecord_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const data::FeatureSpec spec{
      {"input_ids", data::FixedLenFeature{.shape = {kSequenceLength}, .dtype = data::FeatureDType::int64}},
      {"label", data::FixedLenFeature{.shape = {}, .dtype = data::FeatureDType::int64}}};
  const auto parse = data::parse_example_fn(spec);

  harness.measure(
      "serialize_example", {{"records", count}},
      [&] {
        for (const data::Element& e : corpus.elements) {
          std::string bytes = data::serialize_example(e);
        }
      },
      [&](const Timing& t) { return rates(n, corpus.bytes, t); });

  for (const std::string type : {"NONE", "GZIP", "ZLIB"}) {
    const std::string path = (dir / ("data_" + type + ".tfrecord")).string();
    const Json params = {{"compression", type}, {"records", count}};
    harness.measure(
        "write", params, [&] { write_file(path, type, corpus.records); },
        [&](const Timing& t) { return rates(n, corpus.bytes, t); });
    if (type != "NONE") {
      // zlib's fastest level, for writers that care more about time than size.
      harness.measure(
          "write", {{"compression", type}, {"level", 1}, {"records", count}},
          [&] { write_file(path, type, corpus.records, 1); },
          [&](const Timing& t) { return rates(n, corpus.bytes, t); });
      write_file(path, type, corpus.records, 1);
      harness.note(type + " level 1 file: " + std::to_string(std::filesystem::file_size(path)) + " bytes");
    }
    write_file(path, type, corpus.records);  // the file the readers read, whatever --filter kept
    harness.note(type + " file: " + std::to_string(std::filesystem::file_size(path)) + " bytes for " +
                 std::to_string(static_cast<std::int64_t>(corpus.bytes)) + " bytes of records");

    const auto dataset = data::TFRecordDataset({path});
    harness.measure(
        "read", params,
        [&] {
          std::int64_t seen = 0;
          for (const data::Element& e : dataset) seen += static_cast<std::int64_t>(e.strings("record").scalar().size());
          if (seen != static_cast<std::int64_t>(corpus.bytes)) throw std::runtime_error("read back the wrong bytes");
        },
        [&](const Timing& t) { return rates(n, corpus.bytes, t); });

    const auto parsed = dataset.map(parse);
    harness.measure(
        "read_parse", params,
        [&] {
          std::int64_t seen = 0;
          for (const data::Element& e : parsed) seen += e.tensor("input_ids").numel();
          if (seen != count * kSequenceLength) throw std::runtime_error("parsed the wrong number of ids");
        },
        [&](const Timing& t) { return rates(n, corpus.bytes, t); });
  }

  std::filesystem::remove_all(dir);
  return harness.finish();
}
