// The merge loop of WordPiece training: byte-pair encoding over counted words, with "##" on the
// pieces that continue a word.
//
//   std::vector<text::WordCount> words = {{U"hug", 10}, {U"pug", 5}, {U"hugs", 5}};
//   std::vector<std::string> vocab = text::learn_wordpiece_vocab(words, {.vocab_size = 20, .min_frequency = 2});
//   // {"g", "h", "p", "s", "u", "##g", "##s", "##u", "##ug", "hug", "pug", "hugs"}
//
// See wordpiece_trainer.h for the rules and tie-breaks; this file holds the algorithm alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::text {

struct WordCount {
  std::u32string word;
  std::uint64_t count = 0;
};

struct BpeOptions {
  std::int64_t vocab_size = 8192;
  std::int64_t min_frequency = 2;
  std::int64_t limit_alphabet = 0;  ///< 0: keep every character
  std::vector<std::string> special_tokens;
  std::string continuing_subword_prefix = "##";
};

/// The vocabulary, in id order, learned from distinct words and their counts.
std::vector<std::string> learn_wordpiece_vocab(const std::vector<WordCount>& words, const BpeOptions& options);

}  // namespace kestrel::text
