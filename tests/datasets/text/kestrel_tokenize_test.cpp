// The kestrel-tokenize tool, run as a separate process on files written by the test.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

#ifdef KESTREL_TOKENIZE_TOOL

namespace kestrel::testing {
namespace {

struct ToolRun {
  int status = -1;
  std::string out;
};

// Runs the tool with stdin from `input_path`; stderr goes to `err_path`.
ToolRun run_tool(const std::string& args, const std::string& input_path, const std::string& err_path) {
  const std::string command =
      std::string("'") + KESTREL_TOKENIZE_TOOL + "' " + args + " < '" + input_path + "' 2> '" + err_path + "'";
  ToolRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kVocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n,\nworld\n!\n";

TEST(KestrelTokenize, OneJsonLinePerInputLine) {
  TempDir dir;
  const std::string vocab = dir.write("vocab.txt", kVocab);
  const std::string input = dir.write("in.txt", "Hello, world!\nhello\n\n");
  const ToolRun run = run_tool("--vocab '" + vocab + "'", input, dir.file("err.txt"));
  EXPECT_EQ(run.status, 0) << read_all(dir.file("err.txt"));
  EXPECT_EQ(run.out,
            "{\"input_ids\":[2,5,6,7,8,3],\"attention_mask\":[1,1,1,1,1,1]}\n"
            "{\"input_ids\":[2,5,3],\"attention_mask\":[1,1,1]}\n"
            "{\"input_ids\":[2,3],\"attention_mask\":[1,1]}\n");
}

TEST(KestrelTokenize, MaxLengthAndPadToMultipleOf) {
  TempDir dir;
  const std::string vocab = dir.write("vocab.txt", kVocab);
  const std::string input = dir.write("in.txt", "Hello, world!\nhello\n");
  ToolRun run = run_tool("--vocab '" + vocab + "' --max-length 4 --pad-to-multiple-of 4", input, dir.file("err.txt"));
  EXPECT_EQ(run.status, 0) << read_all(dir.file("err.txt"));
  EXPECT_EQ(run.out,
            "{\"input_ids\":[2,5,6,3],\"attention_mask\":[1,1,1,1]}\n"
            "{\"input_ids\":[2,5,3,0],\"attention_mask\":[1,1,1,0]}\n");
}

TEST(KestrelTokenize, TokenizerJson) {
  TempDir dir;
  const std::string json = dir.write("tokenizer.json", R"({
    "normalizer": {"type": "BertNormalizer", "lowercase": false, "strip_accents": null},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "Hi": 5, "##s": 6}}})");
  const std::string input = dir.write("in.txt", "His hi\n");
  const ToolRun run = run_tool("--tokenizer-json '" + json + "'", input, dir.file("err.txt"));
  EXPECT_EQ(run.status, 0) << read_all(dir.file("err.txt"));
  EXPECT_EQ(run.out, "{\"input_ids\":[2,5,6,1,3],\"attention_mask\":[1,1,1,1,1]}\n");
}

TEST(KestrelTokenize, ErrorsNameTheFileOrLineAndExitOne) {
  TempDir dir;
  const std::string input = dir.write("in.txt", "hello\n");
  const std::string missing = dir.file("missing.txt");
  ToolRun run = run_tool("--vocab '" + missing + "'", input, dir.file("err.txt"));
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(contains(read_all(dir.file("err.txt")), missing)) << read_all(dir.file("err.txt"));

  const std::string bad_json = dir.write("bad.json", "{");
  run = run_tool("--tokenizer-json '" + bad_json + "'", input, dir.file("err.txt"));
  EXPECT_EQ(run.status, 1);
  EXPECT_TRUE(contains(read_all(dir.file("err.txt")), bad_json)) << read_all(dir.file("err.txt"));

  const std::string vocab = dir.write("vocab.txt", kVocab);
  const std::string bad_text = dir.write("bad.txt", "hello\nbad \xff\nworld\n");
  run = run_tool("--vocab '" + vocab + "'", bad_text, dir.file("err.txt"));
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.out, "{\"input_ids\":[2,5,3],\"attention_mask\":[1,1,1]}\n");  // the lines before it
  const std::string err = read_all(dir.file("err.txt"));
  EXPECT_TRUE(contains(err, "stdin line 2")) << err;
  EXPECT_TRUE(contains(err, "byte offset 4")) << err;

  run = run_tool("--vocab '" + vocab + "' --replace-invalid-utf8", bad_text, dir.file("err.txt"));
  EXPECT_EQ(run.status, 0);
}

}  // namespace
}  // namespace kestrel::testing

#endif  // KESTREL_TOKENIZE_TOOL
