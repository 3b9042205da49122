// The WordPiece tokenizer on arbitrary bytes (invalid UTF-8 included): tokenize, encode a single
// text or a pair with the truncation and padding the first byte picks, and decode ids made of the
// input's bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

namespace {

const text::WordPieceTokenizer& tokenizer(bool lower_case) {
  // Specials, words, continuations, punctuation, accents and CJK, so every path of the pipeline runs.
  static const std::vector<std::string> vocab = {
      "[PAD]", "[UNK]", "[CLS]",     "[SEP]",  "[MASK]", "[NEW]",  "hello",    "world", "##s",
      "##ing", "un",    "##aff",     "##able", "a",      "b",      "##b",      ",",     ".",
      "!",     "'",     "caf\u00e9", "cafe",   "\u4e2d", "\u00e9", "##\u00e9", "run"};
  static const text::WordPieceTokenizer lowercasing(vocab, {.additional_special_tokens = {"[NEW]"}});
  static const text::WordPieceTokenizer cased(
      vocab, {.do_lower_case = false, .strip_accents = false, .max_input_chars_per_word = 5});
  return lower_case ? lowercasing : cased;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view text = fuzz::bytes(data + 1, size - 1);
  const text::WordPieceTokenizer& tok = tokenizer((mode & 1) != 0);
  constexpr text::Truncation kTruncations[] = {text::Truncation::do_not_truncate, text::Truncation::longest_first,
                                               text::Truncation::only_first, text::Truncation::only_second};
  constexpr text::Padding kPaddings[] = {text::Padding::do_not_pad, text::Padding::longest, text::Padding::max_length,
                                         text::Padding::do_not_pad};
  const std::optional<std::int64_t> max_length =
      (mode & 0x20) != 0 ? std::optional<std::int64_t>(mode >> 6) : std::nullopt;  // 0 to 3 tokens
  const text::EncodeOptions options{.padding = kPaddings[(mode >> 1) & 3],
                                    .truncation = kTruncations[(mode >> 3) & 3],
                                    .max_length = max_length,
                                    .pad_to_multiple_of = (mode & 0x40) != 0 ? 3 : 0,
                                    .return_special_tokens_mask = (mode & 0x80) != 0};
  try {
    tok.tokenize(text);
    tok.encode(text, options);
    const std::size_t half = text.size() / 2;
    tok.encode(text.substr(0, half), text.substr(half), options);
  } catch (const Error&) {
  }
  std::vector<std::int64_t> ids;
  for (const char c : text) ids.push_back(static_cast<signed char>(c));  // negative and unknown ids too
  try {
    tok.decode(ids, (mode & 1) != 0);
  } catch (const Error&) {
  }
  return 0;
}
