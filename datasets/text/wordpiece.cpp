#include "datasets/text/wordpiece.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "datasets/text/utf8.h"

namespace kestrel::text {
namespace {

std::size_t count_chars(std::string_view utf8_text) {
  // Every byte that is not a continuation byte starts a character.
  return static_cast<std::size_t>(std::count_if(utf8_text.begin(), utf8_text.end(),
                                                [](char c) { return (static_cast<std::uint8_t>(c) & 0xC0) != 0x80; }));
}

struct WordPieceScratch {
  std::string bytes;
  std::vector<std::size_t> offsets;  // byte offset of each character, plus the end
  std::vector<std::int64_t> pieces;
};

WordPieceScratch& wordpiece_scratch() {
  thread_local WordPieceScratch s;
  return s;
}

}  // namespace

WordPiece::WordPiece(const std::vector<std::string>& vocab, WordPieceOptions options) : options_(std::move(options)) {
  const std::string& prefix = options_.continuing_subword_prefix;
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    const std::string& token = vocab[id];
    starts_.insert(token, static_cast<std::int64_t>(id));
    max_start_chars_ = std::max(max_start_chars_, count_chars(token));
    if (!prefix.empty() && token.size() > prefix.size() && token.compare(0, prefix.size(), prefix) == 0) {
      const std::string_view rest = std::string_view(token).substr(prefix.size());
      continuations_.insert(rest, static_cast<std::int64_t>(id));
      max_continuation_chars_ = std::max(max_continuation_chars_, count_chars(rest));
    }
  }
}

std::optional<std::int64_t> WordPiece::find(std::string_view token) const {
  const std::int64_t id = starts_.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

void WordPiece::tokenize(std::u32string_view word, std::vector<std::int64_t>& out) const {
  if (word.empty()) return;
  if (static_cast<std::int64_t>(word.size()) > options_.max_input_chars_per_word) {
    out.push_back(options_.unk_id);
    return;
  }
  WordPieceScratch& s = wordpiece_scratch();
  s.bytes.clear();
  s.offsets.clear();
  for (char32_t c : word) {
    s.offsets.push_back(s.bytes.size());
    utf8::append(s.bytes, c);
  }
  s.offsets.push_back(s.bytes.size());
  const std::string_view bytes = s.bytes;
  const std::size_t n = word.size();

  s.pieces.clear();
  std::size_t start = 0;
  while (start < n) {
    // With an empty prefix a continuation is looked up as a whole token.
    const bool first = start == 0 || options_.continuing_subword_prefix.empty();
    const TokenMap& map = first ? starts_ : continuations_;
    // No token is longer than the longest in the vocabulary: start the search there.
    std::size_t end = std::min(n, start + (first ? max_start_chars_ : max_continuation_chars_));
    std::int64_t found = -1;
    for (; end > start; --end) {
      found = map.find(bytes.substr(s.offsets[start], s.offsets[end] - s.offsets[start]));
      if (found >= 0) break;
    }
    if (found < 0) {
      out.push_back(options_.unk_id);
      return;
    }
    s.pieces.push_back(found);
    start = end;
  }
  out.insert(out.end(), s.pieces.begin(), s.pieces.end());
}

}  // namespace kestrel::text
