// The WordPiece vocabulary the text tutorials share: --vocab FILE, or one trained on the training
// texts (--vocab-size) and saved beside the run's other outputs; and --fortunes-dir.
//
//   tutorials::VocabFlags vocab;
//   tutorials::add_vocab_flags(cli, vocab);
//   ...
//   text::WordPieceTokenizer tokenizer = tutorials::make_tokenizer(vocab, train_texts, output_dir);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/builtin/fortunes.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "programs/command_line.h"

namespace kestrel::tutorials {

struct VocabFlags {
  std::string vocab_file;  ///< empty: train one
  std::int64_t vocab_size = 8192;
  std::string fortunes_dir = datasets::fortunes::kDefaultDirectory;
};

/// Registers --vocab, --vocab-size and --fortunes-dir, bound to the fields (their values are the defaults).
void add_vocab_flags(programs::CommandLine& cli, VocabFlags& flags);

/// The tokenizer of flags.vocab_file, or of a vocabulary trained on `texts` (never test texts) and
/// saved as output_dir/vocab.txt; prints which, with the vocabulary's size, unless `quiet` (a
/// worker other than the chief, which would print the same).
text::WordPieceTokenizer make_tokenizer(const VocabFlags& flags, const std::vector<std::string>& texts,
                                        const std::string& output_dir, bool quiet = false);

}  // namespace kestrel::tutorials
