// Training a WordPiece vocabulary on text, as Hugging Face tokenizers' WordPieceTrainer does.
//
//   std::vector<std::string> vocab = text::train_wordpiece_vocab_from_files(
//       {"corpus.txt"}, {.vocab_size = 8192, .min_frequency = 2});
//   // vocab: "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", the characters, "##" + characters, merges...
//   text::WordPieceTrainerOptions options{.vocab_size = 4000, .lowercase = false};
//   text::WordPieceTokenizer tok(text::train_wordpiece_vocab(lines, options), options.tokenizer_options());
//
// The text is normalized and split into words with the tokenizer's own BERT rules, and words are
// counted. The vocabulary starts with the special tokens, then every character of the words
// (sorted by code point), then every character seen inside a word with the "##" prefix (sorted by
// code point). Then, as byte-pair encoding, the most frequent adjacent pair of pieces is merged
// into a new token ("un" + "##able" -> "unable", "##a" + "##b" -> "##ab"), until the vocabulary
// has vocab_size tokens or no pair occurs min_frequency times.
//
// Deterministic: words are counted exactly, and a tie between pairs goes to the pair whose first
// piece has the smaller id, then the smaller second id (Hugging Face's rule; ids follow the order
// above, merged tokens in order of creation). The result does not depend on the thread count.
// As in Hugging Face, the special tokens and the alphabet are never cut, so a tiny vocab_size can
// be exceeded by them (limit_alphabet bounds the alphabet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"

namespace kestrel::text {

struct WordPieceTrainerOptions {
  std::int64_t vocab_size = 8192;
  /// A pair must occur this many times (counting word frequencies) to be merged.
  std::int64_t min_frequency = 2;
  /// First in the vocabulary, in this order; never counted as words when they appear in the text.
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  /// Keep only this many characters, the most frequent (ties: the smaller code point); 0 keeps all.
  std::int64_t limit_alphabet = 0;
  /// The normalization, as TokenizerOptions: lower-case, strip accents (unset: when lower-casing),
  /// split CJK ideographs, clean control characters.
  bool lowercase = true;
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;
  bool clean_text = true;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::error;

  /// Options for a WordPieceTokenizer that normalizes as this training did.
  TokenizerOptions tokenizer_options() const;
};

/// Trains on `texts` (lines or documents). Throws ValueError naming the text for invalid UTF-8.
std::vector<std::string> train_wordpiece_vocab(const std::vector<std::string>& texts,
                                               const WordPieceTrainerOptions& options = {});
/// Trains on the contents of files. Throws IOError naming the file when it cannot be read,
/// ValueError naming the file and byte offset for invalid UTF-8.
std::vector<std::string> train_wordpiece_vocab_from_files(const std::vector<std::string>& paths,
                                                          const WordPieceTrainerOptions& options = {});

}  // namespace kestrel::text
