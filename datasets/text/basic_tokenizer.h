// BERT's BasicTokenizer: normalization and word splitting, before WordPiece.
//
//   text::BasicTokenizer basic({.lowercase = true, .strip_accents = true});
//   text::Words words;
//   basic.tokenize(U"H\u00E9llo, W\u00F6rld! \u4E2D\u6587", words);
//   // words: "hello", ",", "world", "!", "\u4E2D", "\u6587"
//
// Steps, in Hugging Face's order: clean the text and space out CJK ideographs, NFC, split on
// whitespace, lower-case and strip accents word by word, split around punctuation. A word equal
// to one of `never_split` (the special tokens) is kept as it is. The vocabulary trainer runs the
// same steps, so a trained vocabulary fits the tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/text/bert_normalizer.h"

namespace kestrel::text {

/// Words stored back to back in one buffer, so tokenizing allocates nothing per word.
class Words {
 public:
  void clear() {
    chars_.clear();
    ends_.clear();
  }
  void push_back(std::u32string_view word) {
    chars_.append(word);
    ends_.push_back(chars_.size());
  }
  std::size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::u32string_view operator[](std::size_t i) const {
    const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::u32string_view(chars_).substr(begin, ends_[i] - begin);
  }

 private:
  std::u32string chars_;
  std::vector<std::size_t> ends_;
};

class BasicTokenizer {
 public:
  explicit BasicTokenizer(NormalizerOptions options = {}, std::vector<std::u32string> never_split = {});

  /// Appends the words of `text` to `out`.
  void tokenize(std::u32string_view text, Words& out) const;
  const NormalizerOptions& options() const { return options_; }

 private:
  bool is_never_split(std::u32string_view word) const;

  NormalizerOptions options_;
  std::vector<std::u32string> never_split_;
};

}  // namespace kestrel::text
