#include "datasets/text/wordpiece_trainer.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "datasets/text/basic_tokenizer.h"
#include "datasets/text/bpe_merges.h"
#include "datasets/text/special_tokens.h"
#include "datasets/text/utf8.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/io/read_file.h"

namespace kestrel::text {
namespace {

constexpr const char* kTrainerPrefix = "[train_wordpiece_vocab]";
constexpr std::size_t kChunkBytes = 1 << 16;  // files are cut into pieces of about this size, at line ends

using Counts = std::unordered_map<std::u32string, std::uint64_t>;

// One piece of input: a text, or a part of a file.
struct Piece {
  std::string_view text;
  std::string context;  // for error messages: "text 3"
};

class WordCounter {
 public:
  explicit WordCounter(const WordPieceTrainerOptions& options)
      : basic_({.clean_text = options.clean_text,
                .tokenize_chinese_chars = options.tokenize_chinese_chars,
                .lowercase = options.lowercase,
                .strip_accents = options.strip_accents.value_or(options.lowercase)}),
        invalid_utf8_(options.invalid_utf8) {
    std::vector<std::u32string> specials;
    for (const std::string& token : options.special_tokens) {
      specials.push_back(utf8::decode(token, InvalidUtf8::error, std::string(kTrainerPrefix) + " special token:"));
    }
    specials_ = SpecialTokens(std::move(specials));
  }

  // Counts on the thread pool, one map per chunk of pieces, merged at the end: the sums, and so
  // the vocabulary, do not depend on how the work was split.
  Counts count(const std::vector<Piece>& pieces) const {
    Counts total;
    std::mutex mutex;
    parallel_for(static_cast<std::int64_t>(pieces.size()), 1, [&](std::int64_t begin, std::int64_t end) {
      Counts local;
      std::u32string decoded;
      std::vector<Segment> segments;
      Words words;
      for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
        try {
          utf8::decode_into(pieces[i].text, invalid_utf8_, kTrainerPrefix, decoded);
        } catch (const ValueError& e) {
          // Named only on failure: building the context for every text would cost an allocation each.
          throw ValueError(std::string(kTrainerPrefix) + " " + pieces[i].context + ":" +
                           std::string(e.what()).substr(std::string_view(kTrainerPrefix).size()));
        }
        segments.clear();
        specials_.split(decoded, segments);
        words.clear();
        for (const Segment& segment : segments) {
          if (segment.special < 0) basic_.tokenize(segment.text, words);
        }
        for (std::size_t k = 0; k < words.size(); ++k) ++local[std::u32string(words[k])];
      }
      std::lock_guard<std::mutex> lock(mutex);
      for (auto& [word, n] : local) total[word] += n;
    });
    return total;
  }

 private:
  BasicTokenizer basic_;
  SpecialTokens specials_;
  InvalidUtf8 invalid_utf8_;
};

void check_options(const WordPieceTrainerOptions& options) {
  if (options.vocab_size < 1) {
    throw ValueError(std::string(kTrainerPrefix) + " vocab_size is " + std::to_string(options.vocab_size) +
                     "; it must be at least 1");
  }
  if (options.min_frequency < 0 || options.limit_alphabet < 0) {
    throw ValueError(std::string(kTrainerPrefix) + " min_frequency and limit_alphabet must be at least 0 (got " +
                     std::to_string(options.min_frequency) + " and " + std::to_string(options.limit_alphabet) + ")");
  }
}

std::vector<std::string> learn(const Counts& counts, const WordPieceTrainerOptions& options) {
  std::vector<WordCount> words;
  words.reserve(counts.size());
  for (const auto& [word, n] : counts) words.push_back({word, n});
  // Sorted, so that nothing downstream sees the hash map's order.
  std::sort(words.begin(), words.end(), [](const WordCount& a, const WordCount& b) { return a.word < b.word; });
  return learn_wordpiece_vocab(words, {.vocab_size = options.vocab_size,
                                       .min_frequency = options.min_frequency,
                                       .limit_alphabet = options.limit_alphabet,
                                       .special_tokens = options.special_tokens});
}

}  // namespace

TokenizerOptions WordPieceTrainerOptions::tokenizer_options() const {
  return {.do_lower_case = lowercase,
          .strip_accents = strip_accents,
          .tokenize_chinese_chars = tokenize_chinese_chars,
          .invalid_utf8 = invalid_utf8,
          .clean_text = clean_text};
}

std::vector<std::string> train_wordpiece_vocab(const std::vector<std::string>& texts,
                                               const WordPieceTrainerOptions& options) {
  check_options(options);
  std::vector<Piece> pieces;
  pieces.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) pieces.push_back({texts[i], "text " + std::to_string(i)});
  return learn(WordCounter(options).count(pieces), options);
}

std::vector<std::string> train_wordpiece_vocab_from_files(const std::vector<std::string>& paths,
                                                          const WordPieceTrainerOptions& options) {
  check_options(options);
  std::vector<std::string> contents;
  contents.reserve(paths.size());
  std::vector<Piece> pieces;
  for (const std::string& path : paths) {
    contents.push_back(io::read_file(path, kTrainerPrefix, "training file"));
    const std::string& content = contents.back();
    if (options.invalid_utf8 == InvalidUtf8::error) {
      if (const std::size_t bad = utf8::find_invalid(content); bad != std::string::npos) {
        throw ValueError(std::string(kTrainerPrefix) + " '" + path + "': invalid UTF-8 at byte offset " +
                         std::to_string(bad) + "; fix the file's encoding, or choose InvalidUtf8::replace");
      }
    }
    // Cut at line ends, so no word (and no UTF-8 sequence) is split between pieces.
    std::size_t start = 0;
    while (start < content.size()) {
      std::size_t end = std::min(content.size(), start + kChunkBytes);
      if (end < content.size()) {
        const std::size_t newline = content.find('\n', end);
        end = newline == std::string::npos ? content.size() : newline + 1;
      }
      pieces.push_back({std::string_view(content).substr(start, end - start), "'" + path + "'"});
      start = end;
    }
  }
  return learn(WordCounter(options).count(pieces), options);
}

}  // namespace kestrel::text
