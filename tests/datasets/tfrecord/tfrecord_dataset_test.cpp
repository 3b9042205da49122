#include "datasets/tfrecord/tfrecord_dataset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/parse_example.h"
#include "datasets/tfrecord/tfrecord_writer.h"
#include "framework/core/error.h"
#include "framework/data/auto_shard.h"
#include "framework/io/record_writer.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::int64s;
using kestrel::testing::read_file;
using kestrel::testing::ScratchDir;
using kestrel::testing::write_file;

std::vector<std::string> records_of(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds) out.push_back(e.strings("record").scalar());
  return out;
}

void write_records(const std::string& path, const std::vector<std::string>& records, const std::string& type = "") {
  TFRecordWriter writer(path, {.compression_type = type});
  for (const auto& r : records) writer.write(r);
  writer.close();
}

TEST(TFRecordDataset, ReadsEachCompressionAndFilesInOrder) {
  ScratchDir dir;
  write_records(dir / "a", {"a0", "a1"}, "");
  write_records(dir / "b", {"b0"}, "GZIP");
  write_records(dir / "c", {}, "ZLIB");
  write_records(dir / "d", {"d0", "", "d2"}, "zlib");
  const auto ds = TFRecordDataset({dir / "a", dir / "b", dir / "c", dir / "d"});
  const std::vector<std::string> want{"a0", "a1", "b0", "d0", "", "d2"};
  EXPECT_EQ(records_of(ds), want);
  EXPECT_EQ(records_of(ds), want);  // every pass opens the files again
  EXPECT_EQ(ds.element_spec(), (ElementSpec{{"record", ValueSpec{.shape = {}, .is_string = true}}}));
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
}

TEST(TFRecordDataset, FilesAreOpenedWhenAPassReachesThem) {
  ScratchDir dir;
  const auto ds = TFRecordDataset({dir / "later"});  // not there yet
  write_records(dir / "later", {"x"});
  EXPECT_EQ(records_of(ds), std::vector<std::string>{"x"});
}

TEST(TFRecordDataset, ForcedCompressionTypes) {
  ScratchDir dir;
  write_records(dir / "g", {"g"}, "GZIP");
  EXPECT_EQ(records_of(TFRecordDataset({dir / "g"}, {.compression_type = "GZIP"})), std::vector<std::string>{"g"});
  const std::string m =
      error_message<IOError>([&] { records_of(TFRecordDataset({dir / "g"}, {.compression_type = ""})); });
  EXPECT_TRUE(contains(m, dir / "g")) << m;
  EXPECT_TRUE(contains(m, "length CRC")) << m;
}

TEST(TFRecordDataset, BadArgumentsRaiseValueError) {
  std::string m = error_message<ValueError>([] { TFRecordDataset({"x"}, {.compression_type = "snappy"}); });
  EXPECT_TRUE(contains(m, "TFRecordDataset")) << m;
  EXPECT_TRUE(contains(m, "'snappy'")) << m;
  m = error_message<ValueError>([] { TFRecordDataset({}); });
  EXPECT_TRUE(contains(m, "no files")) << m;
}

TEST(TFRecordDataset, CorruptRecordRaisesAndIgnoreErrorsSkipsIt) {
  ScratchDir dir;
  const std::string path = dir / "bad.tfrecord";
  write_records(path, {"r0", "r1", "r2"});
  std::string bytes = read_file(path);
  bytes[18 + 12] ^= 1;  // data of r1, which starts at offset 18
  write_file(path, bytes);

  const std::string m = error_message<IOError>([&] { records_of(TFRecordDataset({path})); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "record at offset 18")) << m;
  EXPECT_TRUE(contains(m, "data CRC")) << m;

  const auto tolerant = TFRecordDataset({path}).ignore_errors();
  EXPECT_EQ(records_of(tolerant), (std::vector<std::string>{"r0", "r2"}));
  EXPECT_EQ(tolerant.ignored_errors(), 1);
}

TEST(TFRecordDataset, IgnoreErrorsGoesOnPastTruncatedAndMissingFiles) {
  ScratchDir dir;
  write_records(dir / "cut", {"c0", "c1"}, "GZIP");
  const std::string whole = read_file(dir / "cut");
  write_file(dir / "cut", whole.substr(0, whole.size() - 4));  // inside the trailer: c0 and c1 intact
  write_records(dir / "short", {"s0", "s1"});
  write_file(dir / "short", read_file(dir / "short").substr(0, 25));  // s1 cut
  write_records(dir / "ok", {"k0"});
  const auto ds = TFRecordDataset({dir / "cut", dir / "missing", dir / "short", dir / "ok"}).ignore_errors();
  EXPECT_EQ(records_of(ds), (std::vector<std::string>{"c0", "c1", "s0", "k0"}));
  EXPECT_EQ(ds.ignored_errors(), 3);
  const std::string m = error_message<IOError>([&] { records_of(TFRecordDataset({dir / "missing"})); });
  EXPECT_TRUE(contains(m, dir / "missing")) << m;
}

TEST(TFRecordDataset, ParsedExamplesBatch) {
  ScratchDir dir;
  {
    TFRecordWriter writer(dir / "train.tfrecord.gz", {.compression_type = "GZIP"});
    for (int i = 0; i < 5; ++i) {
      writer.write(serialize_example(Element{{"input_ids", int64s({i, i + 1, i + 2})}, {"label", int64s({i % 2})}}));
    }
  }
  const FeatureSpec spec{{"input_ids", FixedLenFeature{.shape = {3}, .dtype = FeatureDType::int64}},
                         {"label", FixedLenFeature{.shape = {}, .dtype = FeatureDType::int64}}};
  const auto batches = TFRecordDataset({dir / "train.tfrecord.gz"}).map(parse_example_fn(spec)).batch(2).to_vector();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].tensor("input_ids").shape(), Shape({2, 3}));
  EXPECT_EQ(batches[1].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(batches[2].tensor("input_ids").to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5, 6}));
}

TEST(TFRecordDataset, FileShardingGivesEachWorkerItsOwnFiles) {
  ScratchDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back(dir / ("part-" + std::to_string(f) + ".tfrecord"));
    write_records(files.back(), {"p" + std::to_string(f) + "a", "p" + std::to_string(f) + "b"}, f == 1 ? "GZIP" : "");
  }
  Options options;
  options.experimental_distribute.auto_shard_policy = AutoShardPolicy::file;
  const Dataset global = TFRecordDataset(files).batch(2).with_options(options);

  const ShardedDataset w0 = auto_shard(global, 2, 0);
  const ShardedDataset w1 = auto_shard(global, 2, 1);
  EXPECT_EQ(w0.policy, AutoShardPolicy::file);
  // Worker 0 reads parts 0 and 2, worker 1 part 1 (compression detected per file), one record a batch.
  std::vector<std::string> mine;
  for (const Element& batch : w0.dataset) {
    ASSERT_EQ(batch.strings("record").size(), 1);
    mine.push_back(batch.strings("record").values()[0]);
  }
  EXPECT_EQ(mine, (std::vector<std::string>{"p0a", "p0b", "p2a", "p2b"}));
  mine.clear();
  for (const Element& batch : w1.dataset) mine.push_back(batch.strings("record").values().at(0));
  EXPECT_EQ(mine, (std::vector<std::string>{"p1a", "p1b"}));
  EXPECT_EQ(w1.dataset.describe(), "TFRecordDataset -> batch -> with_options");
}

TEST(TFRecordWriter, ErrorsNameTheFile) {
  ScratchDir dir;
  std::string m = error_message<IOError>([] { TFRecordWriter("/nonexistent-dir/out.tfrecord"); });
  EXPECT_TRUE(contains(m, "/nonexistent-dir/out.tfrecord")) << m;
  m = error_message<ValueError>([&] { TFRecordWriter(dir / "x", {.compression_type = "LZ4"}); });
  EXPECT_TRUE(contains(m, dir / "x")) << m;
  EXPECT_TRUE(contains(m, "'LZ4'")) << m;
  TFRecordWriter writer(dir / "closed", {.compression_type = "ZLIB"});
  writer.write("one");
  writer.flush();
  writer.close();
  writer.close();
  m = error_message<IOError>([&] { writer.write("two"); });
  EXPECT_TRUE(contains(m, dir / "closed")) << m;
  EXPECT_EQ(writer.records_written(), 1u);
  // A full disk: the failure names the file (at the latest when the buffered bytes are flushed).
  if (std::filesystem::exists("/dev/full")) {
    m = error_message<IOError>([] {
      TFRecordWriter full("/dev/full");
      full.write(std::string(1 << 16, 'x'));
      full.flush();
    });
    EXPECT_TRUE(contains(m, "/dev/full")) << m;
  }
}

}  // namespace
}  // namespace kestrel::data
