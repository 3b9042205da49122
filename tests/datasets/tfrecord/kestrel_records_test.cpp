// The kestrel-records tool, run as a program on the golden files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "framework/io/record_reader.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"

namespace kestrel::data {
namespace {

using kestrel::testing::golden;
using kestrel::testing::golden_records;
using kestrel::testing::quoted;
using kestrel::testing::read_all;
using kestrel::testing::read_file;
using kestrel::testing::run;
using kestrel::testing::RunResult;
using kestrel::testing::ScratchDir;
using kestrel::testing::write_file;

RunResult tool(const std::string& args) { return run(quoted(KESTREL_RECORDS_TOOL) + " " + args); }

// stderr instead of stdout, for the error messages.
RunResult tool_stderr(const std::string& args) {
  return run(quoted(KESTREL_RECORDS_TOOL) + " " + args + " 2>&1 >/dev/null");
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(KestrelRecords, InspectPrintsTheGoldenJson) {
  const auto want = json_lines(read_file(golden("examples.jsonl")));
  ASSERT_EQ(want.size(), 3u);
  for (const char* name : {"examples.tfrecord", "examples_gzip.tfrecord"}) {
    const auto result = tool("inspect " + quoted(golden(name)));
    EXPECT_EQ(result.status, 0) << name;
    EXPECT_EQ(json_lines(result.out), want) << name;
  }
  const auto forced = tool("inspect --compression gzip " + quoted(golden("examples_gzip.tfrecord")));
  EXPECT_EQ(json_lines(forced.out), want);
}

TEST(KestrelRecords, RawPrintsRecordsThatAreNotExamples) {
  const auto result = tool("inspect --raw " + quoted(golden("records_zlib.tfrecord")));
  ASSERT_EQ(result.status, 0);
  const auto lines = json_lines(result.out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "");
  EXPECT_EQ(lines[2], "hello, kestrel");
  EXPECT_TRUE(lines[3].contains("base64"));
}

TEST(KestrelRecords, FromJsonlReproducesTheGoldenFile) {
  ScratchDir dir;
  const auto plain = tool("from-jsonl " + quoted(golden("examples.jsonl")) + " " + quoted(dir / "out.tfrecord"));
  ASSERT_EQ(plain.status, 0);
  EXPECT_EQ(read_file(dir / "out.tfrecord"), read_file(golden("examples.tfrecord")));
  for (const char* c : {"gzip", "zlib"}) {
    const std::string out = dir / (std::string("out.") + c);
    ASSERT_EQ(
        tool("from-jsonl --compression " + std::string(c) + " " + quoted(golden("examples.jsonl")) + " " + quoted(out))
            .status,
        0);
    EXPECT_EQ(io::RecordReader(out).compression(),
              c == std::string("gzip") ? io::Compression::gzip : io::Compression::zlib);
    EXPECT_EQ(read_all(out).records, read_all(golden("examples.tfrecord")).records) << c;
    EXPECT_EQ(json_lines(tool("inspect " + quoted(out)).out), json_lines(read_file(golden("examples.jsonl"))));
  }
}

TEST(KestrelRecords, ErrorsNameTheFileAndExitWithOne) {
  ScratchDir dir;
  auto r = tool_stderr("inspect " + quoted(dir / "missing.tfrecord"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("missing.tfrecord"), std::string::npos) << r.out;

  std::string bytes = read_file(golden("examples.tfrecord"));
  bytes[20] ^= 1;  // inside the first Example
  write_file(dir / "corrupt.tfrecord", bytes);
  r = tool_stderr("inspect " + quoted(dir / "corrupt.tfrecord"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("corrupt.tfrecord"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("record at offset 0"), std::string::npos) << r.out;

  r = tool_stderr("inspect " + quoted(golden("records.tfrecord")));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("records.tfrecord': record 1 at offset 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--raw"), std::string::npos) << r.out;

  write_file(dir / "bad.jsonl", "{\"a\":{\"int64_list\":[1]}}\n\n{\"b\":{\"int64_list\":[0.5]}}\n");
  r = tool_stderr("from-jsonl " + quoted(dir / "bad.jsonl") + " " + quoted(dir / "bad.tfrecord"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("bad.jsonl' line 3: feature 'b'"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.tfrecord"));  // no half-written output

  r = tool_stderr("from-jsonl " + quoted(dir / "nothing.jsonl") + " " + quoted(dir / "x.tfrecord"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("nothing.jsonl"), std::string::npos) << r.out;
  EXPECT_NE(tool("").status, 0);  // a subcommand is required
}

}  // namespace
}  // namespace kestrel::data
