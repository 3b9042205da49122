// The WordPiece model: greedy longest-match-first splitting of one word into vocabulary ids.
//
//   text::WordPiece wp(vocab, {.unk_id = 1});     // vocab: {"[PAD]", "[UNK]", "un", "##aff", "##able"}
//   std::vector<std::int64_t> ids;
//   wp.tokenize(U"unaffable", ids);               // {2, 3, 4}: "un", "##aff", "##able"
//   wp.tokenize(U"xyz", ids);                     // appends {1}: no piece matches at the start
//
// From the start of the word, the longest prefix in the vocabulary is taken, then the longest
// continuation ("##" + rest) from where it ended, and so on. A word that cannot be covered this
// way, or that has more than max_input_chars_per_word characters, becomes the unknown token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/text/token_map.h"

namespace kestrel::text {

struct WordPieceOptions {
  std::int64_t unk_id = 0;
  std::string continuing_subword_prefix = "##";
  std::int64_t max_input_chars_per_word = 100;
};

class WordPiece {
 public:
  /// `vocab` in id order; when a token appears twice the later id wins, as in Hugging Face.
  WordPiece(const std::vector<std::string>& vocab, WordPieceOptions options);

  /// Appends the ids of one word (no whitespace inside).
  void tokenize(std::u32string_view word, std::vector<std::int64_t>& out) const;
  /// The id of a whole token, if the vocabulary has it.
  std::optional<std::int64_t> find(std::string_view token) const;
  const WordPieceOptions& options() const { return options_; }

 private:
  WordPieceOptions options_;
  TokenMap starts_;                         // every token, for the first piece of a word
  TokenMap continuations_;                  // tokens that begin with the prefix, keyed without it
  std::size_t max_start_chars_ = 0;         // the longest token, in characters
  std::size_t max_continuation_chars_ = 0;  // the longest continuation after its prefix
};

}  // namespace kestrel::text
