#include "tutorials/common/vocab_flags.h"

#include <chrono>
#include <cstdio>

#include "datasets/text/wordpiece_trainer.h"
#include "tutorials/common/seconds_since.h"

namespace kestrel::tutorials {

void add_vocab_flags(programs::CommandLine& cli, VocabFlags& flags) {
  cli.add_option("--vocab", flags.vocab_file, "a BERT vocab.txt to use instead of training one");
  cli.add_option("--vocab-size", flags.vocab_size, "size of the trained WordPiece vocabulary").range(200, 100000);
  cli.add_option("--fortunes-dir", flags.fortunes_dir, "where the fortunes packages put their files");
}

text::WordPieceTokenizer make_tokenizer(const VocabFlags& flags, const std::vector<std::string>& texts,
                                        const std::string& output_dir, bool quiet) {
  std::string path = flags.vocab_file;
  if (path.empty()) {
    const auto start = std::chrono::steady_clock::now();
    path = output_dir + "/vocab.txt";
    text::WordPieceTokenizer(text::train_wordpiece_vocab(texts, {.vocab_size = flags.vocab_size, .min_frequency = 2}))
        .save_vocabulary(path);
    if (!quiet) std::printf("vocab    trained on %zu training texts in %.1f s\n", texts.size(), seconds_since(start));
  }
  text::WordPieceTokenizer tokenizer = text::WordPieceTokenizer::from_vocab_file(path);
  if (!quiet) {
    std::printf("         %lld WordPiece tokens in %s\n", static_cast<long long>(tokenizer.vocab_size()), path.c_str());
  }
  return tokenizer;
}

}  // namespace kestrel::tutorials
