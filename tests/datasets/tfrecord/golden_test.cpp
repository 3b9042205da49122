// Files written by an independent writer (golden/make_golden.py: Python's standard library and
// python3-protobuf) read by Kestrel, and Kestrel's files compared with them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/tfrecord_dataset.h"
#include "datasets/tfrecord/tfrecord_writer.h"
#include "framework/io/compressed_file.h"
#include "framework/io/record_reader.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"

namespace kestrel::data {
namespace {

using kestrel::testing::golden;
using kestrel::testing::golden_examples;
using kestrel::testing::golden_records;
using kestrel::testing::python;
using kestrel::testing::quoted;
using kestrel::testing::read_all;
using kestrel::testing::read_file;
using kestrel::testing::run;
using kestrel::testing::ScratchDir;

std::string decompress(const std::string& path) {
  io::CompressedFileReader in(path);
  std::string out, buf(4096, '\0');
  while (std::size_t n = in.read(buf.data(), buf.size())) out.append(buf.data(), n);
  return out;
}

TEST(Golden, KestrelReadsPythonWrittenFilesInEachCompression) {
  const std::pair<const char*, io::Compression> files[] = {{"records.tfrecord", io::Compression::none},
                                                           {"records_gzip.tfrecord", io::Compression::gzip},
                                                           {"records_zlib.tfrecord", io::Compression::zlib}};
  for (const auto& [name, compression] : files) {
    SCOPED_TRACE(name);
    EXPECT_EQ(io::RecordReader(golden(name)).compression(), compression);
    const auto result = read_all(golden(name));
    EXPECT_EQ(result.error, "");
    EXPECT_EQ(result.records, golden_records());
    std::vector<std::string> through_dataset;
    for (const Element& e : TFRecordDataset({golden(name)})) through_dataset.push_back(e.strings("record").scalar());
    EXPECT_EQ(through_dataset, golden_records());
  }
}

TEST(Golden, UncompressedWritesAreByteIdentical) {
  ScratchDir dir;
  {
    TFRecordWriter writer(dir / "records.tfrecord");
    for (const auto& r : golden_records()) writer.write(r);
  }
  EXPECT_EQ(read_file(dir / "records.tfrecord"), read_file(golden("records.tfrecord")));
  {
    TFRecordWriter writer(dir / "examples.tfrecord");
    for (const Element& e : golden_examples()) writer.write(serialize_example(e));
  }
  EXPECT_EQ(read_file(dir / "examples.tfrecord"), read_file(golden("examples.tfrecord")));
}

TEST(Golden, CompressedWritesHoldTheGoldenStream) {
  ScratchDir dir;
  const std::string stream = read_file(golden("records.tfrecord"));
  for (const char* type : {"GZIP", "ZLIB", "gzip"}) {
    const std::string path = dir / "out.tfrecord";
    {
      TFRecordWriter writer(path, {.compression_type = type});
      for (const auto& r : golden_records()) writer.write(r);
      EXPECT_EQ(writer.records_written(), golden_records().size());
    }
    EXPECT_NE(read_file(path), stream);
    EXPECT_EQ(decompress(path), stream) << type;
  }
  EXPECT_EQ(decompress(golden("examples_gzip.tfrecord")), read_file(golden("examples.tfrecord")));
}

TEST(Golden, PythonReadsKestrelsCompressedFiles) {
  if (python().empty()) GTEST_SKIP() << "/usr/bin/python3 not installed";
  ScratchDir dir;
  for (const char* type : {"GZIP", "ZLIB"}) {
    TFRecordWriter writer(dir / type, {.compression_type = type});
    for (const auto& r : golden_records()) writer.write(r);
  }
  const std::string script =
      "import gzip, sys, zlib\n"
      "g = gzip.decompress(open(sys.argv[1], 'rb').read())\n"
      "z = zlib.decompress(open(sys.argv[2], 'rb').read())\n"
      "want = open(sys.argv[3], 'rb').read()\n"
      "sys.exit(0 if g == want and z == want else 3)\n";
  const auto result = run(python() + " -c " + quoted(script) + " " + quoted(dir / "GZIP") + " " + quoted(dir / "ZLIB") +
                          " " + quoted(golden("records.tfrecord")));
  EXPECT_EQ(result.status, 0) << result.out;
}

TEST(Golden, ExamplesDecodeToTheirFeatures) {
  const auto result = read_all(golden("examples.tfrecord"));
  ASSERT_EQ(result.error, "");
  const auto expected = golden_examples();
  ASSERT_EQ(result.records.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Element e = decode_example(result.records[i]);
    EXPECT_EQ(e.keys(), expected[i].keys()) << i;
    EXPECT_TRUE(e == expected[i]) << "example " << i;
    // Kestrel's deterministic serialization is the same as protobuf's own in Python.
    EXPECT_EQ(serialize_example(e), result.records[i]) << i;
  }
}

}  // namespace
}  // namespace kestrel::data
