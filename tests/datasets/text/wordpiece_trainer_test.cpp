// The vocabulary trainer: the merge order worked out by hand, limits, determinism, and a
// tokenizer built on the result.
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/bpe_merges.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "datasets/text/wordpiece_trainer.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

using text::WordPieceTrainerOptions;

// hug x10, pug x5, pun x12, bun x4, hugs x5, with some capitals and punctuation to normalize away.
std::vector<std::string> hug_corpus() {
  std::vector<std::string> lines;
  for (int i = 0; i < 10; ++i) lines.push_back(i % 2 ? "Hug" : "hug");
  for (int i = 0; i < 5; ++i) lines.push_back("pug hugs");
  for (int i = 0; i < 12; ++i) lines.push_back("PUN");
  for (int i = 0; i < 4; ++i) lines.push_back("  bun\t");
  return lines;
}

// Worked by hand: alphabet b g h n p s u; continuations ##g ##n ##s ##u; then pair counts
// (##u,##g)=20 -> ##ug, (##u,##n)=16 -> ##un, (h,##ug)=15 -> hug, (p,##un)=12 -> pun, then a tie at 5
// between (p,##ug) and (hug,##s) goes to the smaller first id (p) -> pug, then hugs, then bun (4).
const Tokens kHugVocab = {"[PAD]", "[UNK]", "b",   "g",    "h",    "n",   "p",   "s",   "u",    "##g",
                          "##n",   "##s",   "##u", "##ug", "##un", "hug", "pun", "pug", "hugs", "bun"};

TEST(WordPieceTrainer, MergeOrderAsWorkedOutByHand) {
  const WordPieceTrainerOptions options{.vocab_size = 100, .min_frequency = 2, .special_tokens = {"[PAD]", "[UNK]"}};
  EXPECT_EQ(text::train_wordpiece_vocab(hug_corpus(), options), kHugVocab);
}

TEST(WordPieceTrainer, LearnFromCountedWords) {
  // The example in bpe_merges.h.
  const std::vector<text::WordCount> words = {{U"hug", 10}, {U"pug", 5}, {U"hugs", 5}};
  EXPECT_EQ(text::learn_wordpiece_vocab(words, {.vocab_size = 20, .min_frequency = 2}),
            (Tokens{"g", "h", "p", "s", "u", "##g", "##s", "##u", "##ug", "hug", "pug", "hugs"}));
}

TEST(WordPieceTrainer, VocabSizeBoundsTheMerges) {
  const Tokens vocab =
      text::train_wordpiece_vocab(hug_corpus(), {.vocab_size = 16, .special_tokens = {"[PAD]", "[UNK]"}});
  EXPECT_EQ(vocab, Tokens(kHugVocab.begin(), kHugVocab.begin() + 16));
}

TEST(WordPieceTrainer, MinFrequencyStopsTheMerges) {
  Tokens vocab = text::train_wordpiece_vocab(hug_corpus(), {.min_frequency = 5, .special_tokens = {"[PAD]", "[UNK]"}});
  EXPECT_EQ(vocab, Tokens(kHugVocab.begin(), kHugVocab.begin() + 19));  // bun (4 times) is not merged
  vocab = text::train_wordpiece_vocab(hug_corpus(), {.min_frequency = 13, .special_tokens = {"[PAD]", "[UNK]"}});
  EXPECT_EQ(vocab, Tokens(kHugVocab.begin(), kHugVocab.begin() + 16));  // pun (12 times) is not merged
}

TEST(WordPieceTrainer, SpecialTokensFirstAndNeverCounted) {
  std::vector<std::string> lines = hug_corpus();
  lines.push_back("[MASK] hug [CLS]");
  const Tokens vocab = text::train_wordpiece_vocab(lines, {});
  ASSERT_GE(vocab.size(), 5u);
  EXPECT_EQ(Tokens(vocab.begin(), vocab.begin() + 5), (Tokens{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}));
  // The special tokens' characters ("[", "m", ...) did not enter the alphabet.
  EXPECT_EQ(std::count(vocab.begin(), vocab.end(), "["), 0);
  EXPECT_EQ(std::count(vocab.begin(), vocab.end(), "m"), 0);
}

TEST(WordPieceTrainer, LimitAlphabetKeepsTheMostFrequent) {
  // u (36 times) g (20) n (16) h (15) p (17) ... keep 3: u p g; other characters leave the words.
  const Tokens vocab =
      text::train_wordpiece_vocab(hug_corpus(), {.vocab_size = 8, .special_tokens = {"[UNK]"}, .limit_alphabet = 3});
  EXPECT_EQ(Tokens(vocab.begin(), vocab.begin() + 4), (Tokens{"[UNK]", "g", "p", "u"}));
}

TEST(WordPieceTrainer, DeterministicAcrossRunsAndThreads) {
  std::vector<std::string> lines;
  for (int i = 0; i < 2000; ++i) {
    lines.push_back("line " + std::to_string(i * 7919 % 1000) + " the quick brown fox jumps over the lazy dog " +
                    std::string(1, static_cast<char>('a' + i % 26)) + "ing");
  }
  const int saved = num_threads();
  set_num_threads(1);
  const Tokens one = text::train_wordpiece_vocab(lines, {.vocab_size = 300});
  set_num_threads(2);
  const Tokens two = text::train_wordpiece_vocab(lines, {.vocab_size = 300});
  const Tokens again = text::train_wordpiece_vocab(lines, {.vocab_size = 300});
  set_num_threads(saved);
  EXPECT_EQ(one, two);
  EXPECT_EQ(two, again);
  EXPECT_EQ(one.size(), 300u);
}

TEST(WordPieceTrainer, FilesGiveTheSameVocabularyAsTexts) {
  TempDir dir;
  std::string content;
  for (const std::string& line : hug_corpus()) content += line + "\n";
  const std::string path = dir.write("corpus.txt", content);
  EXPECT_EQ(text::train_wordpiece_vocab_from_files({path}, {.special_tokens = {"[PAD]", "[UNK]"}}), kHugVocab);
}

TEST(WordPieceTrainer, TrainedTokenizerRoundTripsText) {
  const std::vector<std::string> lines = {"The quick brown fox, jumps over the lazy dog!",
                                          "Caf\u00e9s serve coffee; dogs don't.", "Foxes and dogs: friends?"};
  std::vector<std::string> corpus;
  for (int i = 0; i < 20; ++i) corpus.insert(corpus.end(), lines.begin(), lines.end());
  const WordPieceTrainerOptions options{.vocab_size = 120};
  text::WordPieceTokenizer tok(text::train_wordpiece_vocab(corpus, options), options.tokenizer_options());
  EXPECT_LE(tok.vocab_size(), 120);
  for (const std::string& line : lines) {
    const Tokens tokens = tok.tokenize(line);
    EXPECT_EQ(std::count(tokens.begin(), tokens.end(), "[UNK]"), 0) << line;
  }
  auto round_trip = [&](const std::string& s) { return tok.decode(tok.encode(s).input_ids, true); };
  EXPECT_EQ(round_trip(lines[0]), "the quick brown fox, jumps over the lazy dog!");
  EXPECT_EQ(round_trip(lines[1]), "cafes serve coffee ; dogs don't.");
  EXPECT_EQ(round_trip(lines[2]), "foxes and dogs : friends?");
}

TEST(WordPieceTrainer, Errors) {
  std::string message = error_message<ValueError>([] { text::train_wordpiece_vocab({"ok", "bad\xC3"}); });
  EXPECT_TRUE(contains(message, "text 1")) << message;
  EXPECT_TRUE(contains(message, "byte offset 3")) << message;
  TempDir dir;
  const std::string bad = dir.write("bad.txt", "fine\nnot \xFF fine\n");
  message = error_message<ValueError>([&] { text::train_wordpiece_vocab_from_files({bad}); });
  EXPECT_TRUE(contains(message, bad)) << message;
  EXPECT_TRUE(contains(message, "byte offset 9")) << message;
  message = error_message<IOError>([&] { text::train_wordpiece_vocab_from_files({dir.file("absent.txt")}); });
  EXPECT_TRUE(contains(message, "absent.txt")) << message;
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { text::train_wordpiece_vocab({"a"}, {.vocab_size = 0}); }), "vocab_size"));
  // Replacing instead of failing: the bad byte is dropped by the cleaning.
  EXPECT_NO_THROW(text::train_wordpiece_vocab({"bad\xC3"}, {.invalid_utf8 = text::InvalidUtf8::replace}));
}

}  // namespace
}  // namespace kestrel::testing
