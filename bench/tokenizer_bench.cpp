// WordPiece throughput on English text: encoding the lines of Debian's fortunes package with
// encode_batch at 1 and 2 threads, plain and padded into int64 batches, and training the
// vocabulary the encoding uses.
//
//   ./build/bench/tokenizer_bench                                  # every case
//   ./build/bench/tokenizer_bench --repeats 10 --json-out tokenizer.json
//   ./build/bench/tokenizer_bench --filter 'encode_batch' --vocab-size 30522
//
// The corpus is the `fortunes` package's English files (about 2.5 MB of UTF-8), one text per
// non-empty line. The vocabulary is trained on that same corpus with train_wordpiece_vocab, so
// the encoding sees BERT-like coverage (few [UNK]). MB/s counts the UTF-8 bytes of the input
// texts. There is no peer: Debian ships neither Hugging Face tokenizers nor transformers.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "datasets/text/wordpiece_trainer.h"
#include "framework/core/thread_pool.h"

namespace {

namespace text = kestrel::text;
using kestrel::bench::Figures;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Record;
using kestrel::bench::Timing;

// The English files of Debian's `fortunes` package (dpkg -L fortunes).
const std::vector<std::string> kFortuneFiles = {
    "art",         "ascii-art",   "computers", "cookie", "debian",       "definitions", "disclaimer",    "drugs",
    "education",   "ethnic",      "food",      "goedel", "humorists",    "kids",        "knghtbrd",      "law",
    "linux",       "linuxcookie", "love",      "magic",  "medicine",     "men-women",   "miscellaneous", "news",
    "paradoxum",   "people",      "perl",      "pets",   "platitudes",   "politics",    "pratchett",     "science",
    "songs-poems", "sports",      "startrek",  "tao",    "translate-me", "wisdom",      "work",          "zippy"};
const std::vector<int> kThreads = {1, 2};
constexpr int kTrainRepeats = 3;  // training takes seconds: a few runs give a stable median

std::vector<std::string> read_lines(const std::string& directory, std::int64_t& files_read) {
  std::vector<std::string> lines;
  for (const std::string& name : kFortuneFiles) {
    std::ifstream in(std::filesystem::path(directory) / name, std::ios::binary);
    if (!in) continue;
    ++files_read;
    std::string line;
    while (std::getline(in, line)) {
      // "%" lines separate fortunes; they are markup, not text.
      if (!line.empty() && line != "%") lines.push_back(line);
    }
  }
  return lines;
}

Figures rates(double bytes, double texts, const Timing& t) {
  const double seconds = t.median_ms / 1e3;
  return Figures{{"mb_per_s", bytes / 1e6 / seconds}, {"texts_per_s", texts / seconds}};
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("tokenizer_bench", "WordPiece encode and vocabulary training throughput on English text");
  std::string directory = "/usr/share/games/fortunes";
  std::int64_t vocab_size = 8192;
  harness.cli().add_option("--fortunes-dir", directory, "Where the fortunes package put its files");
  harness.cli().add_option("--vocab-size", vocab_size, "Size of the trained vocabulary");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  std::int64_t files_read = 0;
  const std::vector<std::string> lines = read_lines(directory, files_read);
  if (lines.empty()) {
    std::cerr << "tokenizer_bench: no fortunes under " << directory << " (apt-get install fortunes)\n";
    return 1;
  }
  double bytes = 0;
  for (const std::string& line : lines) bytes += static_cast<double>(line.size());
  const auto texts = static_cast<double>(lines.size());
  harness.note("corpus: " + std::to_string(files_read) + " files, " + std::to_string(lines.size()) + " lines, " +
               std::to_string(static_cast<std::int64_t>(bytes)) + " bytes");

  // Training runs once for the vocabulary, then is timed as its own case when selected.
  const text::WordPieceTrainerOptions trainer{.vocab_size = vocab_size};
  kestrel::set_num_threads(2);
  const std::vector<std::string> vocab = text::train_wordpiece_vocab(lines, trainer);
  const text::WordPieceTokenizer tok(vocab, trainer.tokenizer_options());
  for (int threads : kThreads) {
    const Json params = {{"vocab", vocab_size}, {"threads", threads}};
    if (!harness.selected(kestrel::bench::case_label("train_vocab", params))) continue;
    kestrel::set_num_threads(threads);
    Record record{.name = "train_vocab", .params = params};
    record.timing = kestrel::bench::time_calls([&] { text::train_wordpiece_vocab(lines, trainer); }, 0, kTrainRepeats);
    record.figures = rates(bytes, texts, record.timing);
    // Timed with its own repeat count, so it is added (and printed) here rather than by measure().
    std::cout << record.label() << ": median " << record.timing.median_ms << " ms over " << kTrainRepeats << " runs, "
              << record.figures.front().second << " MB/s\n";
    harness.add(record);
  }

  std::int64_t tokens = 0, unknown = 0;
  for (const text::Encoding& e : tok.encode_batch(lines).encodings) {
    tokens += e.size() - 2;
    for (std::int64_t id : e.input_ids) unknown += id == tok.unk_token_id();
  }
  harness.note("vocabulary: " + std::to_string(tok.vocab_size()) + " tokens; the corpus encodes to " +
               std::to_string(tokens) + " tokens (" + std::to_string(unknown) + " [UNK]), " +
               std::to_string(bytes / static_cast<double>(tokens)).substr(0, 4) + " bytes per token");

  for (int threads : kThreads) {
    kestrel::set_num_threads(threads);
    harness.measure(
        "encode_batch", {{"vocab", vocab_size}, {"threads", threads}}, [&] { tok.encode_batch(lines); },
        [&](const Timing& t) { return rates(bytes, texts, t); });
  }
  // The training-input path: truncated, padded to a multiple of 32, stacked into int64 batches.
  const text::EncodeOptions padded{.padding = text::Padding::longest,
                                   .truncation = text::Truncation::longest_first,
                                   .max_length = 128,
                                   .pad_to_multiple_of = 32};
  constexpr std::size_t kBatch = 256;
  for (int threads : kThreads) {
    kestrel::set_num_threads(threads);
    harness.measure(
        "encode_padded_batches", {{"vocab", vocab_size}, {"threads", threads}, {"batch", kBatch}},
        [&] {
          for (std::size_t start = 0; start < lines.size(); start += kBatch) {
            const std::vector<std::string> batch(
                lines.begin() + static_cast<std::ptrdiff_t>(start),
                lines.begin() + static_cast<std::ptrdiff_t>(std::min(start + kBatch, lines.size())));
            tok.encode_batch(batch, padded).to_element();
          }
        },
        [&](const Timing& t) { return rates(bytes, texts, t); });
  }
  return harness.finish();
}
