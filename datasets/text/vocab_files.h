// Reading and writing the files a WordPiece vocabulary comes in: BERT's vocab.txt and Hugging
// Face's tokenizer.json.
//
//   std::vector<std::string> vocab = text::read_vocab_file("vocab.txt");   // id = line number
//   text::TokenizerJson json = text::read_tokenizer_json("tokenizer.json");
//   json.options.do_lower_case;   // from the BertNormalizer's "lowercase"
//   text::write_vocab_file("out/vocab.txt", vocab);
//
// vocab.txt is read as Python's text mode reads it (Hugging Face's load_vocab): lines end at
// "\n", "\r\n" or "\r", and only the line ending is removed, so a token may hold spaces.
#pragma once

#include <string>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"

namespace kestrel::text {

/// One token per line. Throws IOError naming the file when it cannot be read or is not UTF-8.
std::vector<std::string> read_vocab_file(const std::string& path);
/// Writes one token per line. Throws ValueError for a token holding a line break, IOError when
/// the file cannot be written.
void write_vocab_file(const std::string& path, const std::vector<std::string>& vocab);

/// What a tokenizer.json holds that Kestrel's WordPieceTokenizer uses.
struct TokenizerJson {
  std::vector<std::string> vocab;  ///< model.vocab plus added_tokens, in id order
  TokenizerOptions options;        ///< normalizer, unk/cls/sep/pad tokens, max_input_chars_per_word
  std::string continuing_subword_prefix = "##";
};

/// Throws IOError when the file cannot be read, ValueError naming the file when it is not JSON,
/// its model is not WordPiece, its normalizer is not a BertNormalizer or its ids have gaps.
TokenizerJson read_tokenizer_json(const std::string& path);

}  // namespace kestrel::text
