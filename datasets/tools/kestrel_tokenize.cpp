// kestrel-tokenize: WordPiece-encode lines of text from stdin, one JSON line out per line in.
//
//   echo "Hello, world!" | kestrel-tokenize --vocab vocab.txt
//   {"input_ids":[101,7592,1010,2088,999,102],"attention_mask":[1,1,1,1,1,1]}
//   kestrel-tokenize --tokenizer-json tokenizer.json --max-length 128 --pad-to-multiple-of 8 < lines.txt
//
// --max-length truncates each line (longest_first, special tokens included); --pad-to-multiple-of
// pads each line on its own, with the pad id and attention mask 0, to the next multiple. Lines are
// encoded in blocks on the thread pool and printed in input order. On an error the tool names the
// file (or the stdin line) on stderr and exits with status 1.
#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "programs/command_line.h"

namespace {

using namespace kestrel;

constexpr std::size_t kBlockLines = 4096;  // encoded together: enough to keep both cores busy

struct Settings {
  std::string vocab;
  std::string tokenizer_json;
  std::optional<std::int64_t> max_length;
  std::optional<std::int64_t> pad_to_multiple_of;
  bool cased = false;
  bool replace_invalid_utf8 = false;
};

text::WordPieceTokenizer load(const Settings& s) {
  if (!s.tokenizer_json.empty()) return text::WordPieceTokenizer::from_tokenizer_json(s.tokenizer_json);
  return text::WordPieceTokenizer::from_vocab_file(
      s.vocab, {.do_lower_case = !s.cased,
                .invalid_utf8 = s.replace_invalid_utf8 ? text::InvalidUtf8::replace : text::InvalidUtf8::error});
}

void print(const text::Encoding& e) {
  nlohmann::ordered_json line;
  line["input_ids"] = e.input_ids;
  line["attention_mask"] = e.attention_mask;
  std::cout << line.dump() << '\n';
}

text::Encoding pad_line(const text::WordPieceTokenizer& tok, const Settings& s, text::Encoding e) {
  if (!s.pad_to_multiple_of) return e;
  return tok.pad({std::move(e)}, {.padding = text::Padding::longest, .pad_to_multiple_of = *s.pad_to_multiple_of})
      .encodings.front();
}

void encode_block(const text::WordPieceTokenizer& tok, const Settings& s, const std::vector<std::string>& lines,
                  std::int64_t first_line) {
  text::EncodeOptions options;
  if (s.max_length) {
    options.truncation = text::Truncation::longest_first;
    options.max_length = s.max_length;
  }
  text::BatchEncoding batch;
  try {
    batch = tok.encode_batch(lines, options);
  } catch (const ValueError&) {
    // The error path only: encode line by line, printing the lines before the bad one, to name
    // the bad line's number.
    for (std::size_t i = 0; i < lines.size(); ++i) {
      try {
        print(pad_line(tok, s, tok.encode(lines[i], options)));
      } catch (const ValueError& e) {
        const bool utf8 = std::string_view(e.what()).find("invalid UTF-8") != std::string_view::npos;
        throw ValueError("stdin line " + std::to_string(first_line + static_cast<std::int64_t>(i)) + ": " + e.what() +
                         (utf8 && !s.vocab.empty() ? " (--replace-invalid-utf8 does that here)" : ""));
      }
    }
    throw;
  }
  for (text::Encoding& e : batch.encodings) print(pad_line(tok, s, std::move(e)));
}

void run(const Settings& s) {
  const text::WordPieceTokenizer tok = load(s);
  std::vector<std::string> lines;
  std::string line;
  std::int64_t first_line = 1;
  while (std::getline(std::cin, line)) {
    lines.push_back(line);
    if (lines.size() == kBlockLines) {
      encode_block(tok, s, lines, first_line);
      first_line += static_cast<std::int64_t>(lines.size());
      lines.clear();
    }
  }
  if (!lines.empty()) encode_block(tok, s, lines, first_line);
}

}  // namespace

int main(int argc, char** argv) {
  programs::CommandLine cli("kestrel-tokenize",
                            "WordPiece-encode lines of stdin; print {\"input_ids\", \"attention_mask\"} per line");
  Settings s;
  programs::Option vocab = cli.add_option("--vocab", s.vocab, "BERT vocab.txt, one token per line");
  programs::Option json =
      cli.add_option("--tokenizer-json", s.tokenizer_json, "Hugging Face tokenizer.json (WordPiece model)");
  vocab.excludes(json);
  cli.add_option("--max-length", s.max_length, "Truncate each line to this many tokens (special tokens included)")
      .positive();
  cli.add_option("--pad-to-multiple-of", s.pad_to_multiple_of, "Pad each line to a multiple of this many tokens")
      .positive();
  cli.add_flag("--cased", s.cased, "With --vocab: keep case and accents (a cased BERT vocabulary)");
  cli.add_flag("--replace-invalid-utf8", s.replace_invalid_utf8,
               "With --vocab: replace invalid UTF-8 instead of failing (as Python's errors=\"replace\")");
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  if (s.vocab.empty() && s.tokenizer_json.empty()) {
    std::cerr << "kestrel-tokenize: give --vocab FILE or --tokenizer-json FILE\n";
    return 1;
  }
  std::ios::sync_with_stdio(false);
  try {
    run(s);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "kestrel-tokenize: " << e.what() << '\n';
    return 1;
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}
