#include "datasets/text/basic_tokenizer.h"

#include <algorithm>
#include <utility>

#include "datasets/text/pre_tokenizer.h"

namespace kestrel::text {
namespace {

// Reused buffers: tokenizing runs once per text, often millions of times, from many threads.
struct BasicTokenizerScratch {
  std::u32string cleaned;
  std::u32string word;
  std::u32string lowered;
  std::vector<std::u32string_view> words;
  std::vector<std::u32string_view> pieces;
};

BasicTokenizerScratch& basic_tokenizer_scratch() {
  thread_local BasicTokenizerScratch s;
  return s;
}

}  // namespace

BasicTokenizer::BasicTokenizer(NormalizerOptions options, std::vector<std::u32string> never_split)
    : options_(options), never_split_(std::move(never_split)) {}

bool BasicTokenizer::is_never_split(std::u32string_view word) const {
  return std::any_of(never_split_.begin(), never_split_.end(), [word](const std::u32string& s) { return s == word; });
}

void BasicTokenizer::tokenize(std::u32string_view text, Words& out) const {
  BasicTokenizerScratch& s = basic_tokenizer_scratch();
  clean_text(text, options_, s.cleaned);
  to_nfc(s.cleaned);
  s.words.clear();
  split_on_whitespace(s.cleaned, s.words);
  for (std::u32string_view word : s.words) {
    if (!never_split_.empty() && is_never_split(word)) {
      out.push_back(word);
      continue;
    }
    std::u32string_view current = word;
    if (options_.lowercase) {
      lowercase_into(word, s.lowered);
      current = s.lowered;
    }
    if (options_.strip_accents) {
      s.word.assign(current);
      strip_accents(s.word);
      current = s.word;
    }
    s.pieces.clear();
    split_on_punctuation(current, s.pieces);
    // Stripping accents can empty a word (a lone combining mark); such pieces vanish, as the
    // final whitespace split of BERT's BasicTokenizer drops them.
    for (std::u32string_view piece : s.pieces) {
      if (!piece.empty()) out.push_back(piece);
    }
  }
}

}  // namespace kestrel::text
