#include "datasets/text/bpe_merges.h"

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include "datasets/text/utf8.h"

namespace kestrel::text {
namespace {

using Pair = std::uint64_t;  // (first id << 32) | second id: ordering by it orders by first, then second

Pair make_pair_key(std::uint32_t a, std::uint32_t b) { return (static_cast<Pair>(a) << 32) | b; }
std::uint32_t first_of(Pair p) { return static_cast<std::uint32_t>(p >> 32); }
std::uint32_t second_of(Pair p) { return static_cast<std::uint32_t>(p & 0xFFFFFFFFu); }

struct Candidate {
  std::int64_t count;
  Pair pair;
  // The heap's top is the highest count; among equal counts, the smallest pair.
  bool operator<(const Candidate& other) const {
    return count != other.count ? count < other.count : pair > other.pair;
  }
};

class Vocab {
 public:
  std::uint32_t add(const std::string& token) {
    auto [it, inserted] = ids_.try_emplace(token, static_cast<std::uint32_t>(tokens_.size()));
    if (inserted) tokens_.push_back(token);
    return it->second;
  }
  const std::string& operator[](std::uint32_t id) const { return tokens_[id]; }
  std::size_t size() const { return tokens_.size(); }
  std::vector<std::string> release() { return std::move(tokens_); }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

// The characters to keep: all, or the limit_alphabet most frequent (ties: smaller code point).
std::vector<char32_t> alphabet_of(const std::vector<WordCount>& words, std::int64_t limit) {
  std::map<char32_t, std::uint64_t> counts;
  for (const WordCount& w : words) {
    for (char32_t c : w.word) counts[c] += w.count;
  }
  std::vector<std::pair<char32_t, std::uint64_t>> chars(counts.begin(), counts.end());
  if (limit > 0 && chars.size() > static_cast<std::size_t>(limit)) {
    std::stable_sort(chars.begin(), chars.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    chars.resize(static_cast<std::size_t>(limit));
    std::sort(chars.begin(), chars.end());
  }
  std::vector<char32_t> alphabet;
  for (const auto& [c, count] : chars) alphabet.push_back(c);
  return alphabet;
}

class Merger {
 public:
  Merger(const std::vector<WordCount>& words, const BpeOptions& options) : options_(options) {
    for (const std::string& token : options.special_tokens) vocab_.add(token);
    const std::vector<char32_t> alphabet = alphabet_of(words, options.limit_alphabet);
    std::unordered_map<char32_t, std::uint32_t> start_ids;
    for (char32_t c : alphabet) start_ids[c] = vocab_.add(utf8::encode(std::u32string(1, c)));
    // Continuation characters get ids in code point order too, so ids never depend on word order.
    std::map<char32_t, bool> continuing;
    for (const WordCount& w : words) {
      for (std::size_t i = 1; i < w.word.size(); ++i) {
        if (start_ids.count(w.word[i]) != 0) continuing[w.word[i]] = true;
      }
    }
    std::unordered_map<char32_t, std::uint32_t> continuation_ids;
    for (const auto& [c, unused] : continuing) {
      continuation_ids[c] = vocab_.add(options.continuing_subword_prefix + utf8::encode(std::u32string(1, c)));
    }
    for (const WordCount& w : words) {
      std::vector<std::uint32_t> symbols;
      for (std::size_t i = 0; i < w.word.size(); ++i) {
        // A character left out of the alphabet is dropped from the word, and what follows it keeps
        // its "##" (the position in the word decides), as Hugging Face does.
        const char32_t c = w.word[i];
        if (start_ids.count(c) == 0) continue;
        symbols.push_back(i == 0 ? start_ids[c] : continuation_ids[c]);
      }
      symbols_.push_back(std::move(symbols));
      counts_.push_back(static_cast<std::int64_t>(w.count));
    }
    for (std::uint32_t w = 0; w < symbols_.size(); ++w) add_pairs(w, /*index=*/true);
    for (const auto& [pair, count] : pair_counts_) {
      if (count > 0) heap_.push({count, pair});
    }
    seen_.assign(symbols_.size(), 0);
  }

  std::vector<std::string> run() {
    std::uint32_t step = 0;
    while (static_cast<std::int64_t>(vocab_.size()) < options_.vocab_size && !heap_.empty()) {
      const Candidate top = heap_.top();
      heap_.pop();
      const std::int64_t current = pair_counts_[top.pair];
      if (current != top.count) {  // stale: merges since it was pushed changed the count
        if (current > 0) heap_.push({current, top.pair});
        continue;
      }
      if (top.count < 1 || top.count < options_.min_frequency) break;
      merge(top.pair, ++step);
    }
    return vocab_.release();
  }

 private:
  // Adds (or with sign -1 removes) word w's pairs to the counts; `index` records where they occur.
  void add_pairs(std::uint32_t w, bool index, std::int64_t sign = 1) {
    const std::vector<std::uint32_t>& s = symbols_[w];
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      const Pair p = make_pair_key(s[i], s[i + 1]);
      pair_counts_[p] += sign * counts_[w];
      if (index) {
        std::vector<std::uint32_t>& where = where_[p];
        if (where.empty() || where.back() != w) where.push_back(w);
      }
    }
  }

  void merge(Pair pair, std::uint32_t step) {
    const std::uint32_t a = first_of(pair), b = second_of(pair);
    std::string token = vocab_[a];
    const std::string& second = vocab_[b];
    const std::string& prefix = options_.continuing_subword_prefix;
    token += second.compare(0, prefix.size(), prefix) == 0 ? second.substr(prefix.size()) : second;
    const std::uint32_t merged = vocab_.add(token);

    const std::vector<std::uint32_t> where = std::move(where_[pair]);
    where_.erase(pair);
    std::vector<Pair> grown;
    for (std::uint32_t w : where) {
      if (seen_[w] == step) continue;  // listed twice
      seen_[w] = step;
      std::vector<std::uint32_t>& s = symbols_[w];
      bool found = false;
      for (std::size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == a && s[i + 1] == b;
      if (!found) continue;  // an earlier merge already consumed the pair in this word
      // Recount the whole word: words are short, and exact counts keep the result deterministic.
      add_pairs(w, /*index=*/false, -1);
      std::vector<std::uint32_t> merged_symbols;
      merged_symbols.reserve(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          merged_symbols.push_back(merged);
          ++i;
        } else {
          merged_symbols.push_back(s[i]);
        }
      }
      s = std::move(merged_symbols);
      add_pairs(w, /*index=*/false, +1);
      for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] != merged && s[i + 1] != merged) continue;
        const Pair p = make_pair_key(s[i], s[i + 1]);
        std::vector<std::uint32_t>& list = where_[p];
        if (list.empty() || list.back() != w) list.push_back(w);
        grown.push_back(p);
      }
    }
    // Only pairs with the new token gained occurrences; they enter the heap with their counts.
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (Pair p : grown) heap_.push({pair_counts_[p], p});
  }

  const BpeOptions& options_;
  Vocab vocab_;
  std::vector<std::vector<std::uint32_t>> symbols_;
  std::vector<std::int64_t> counts_;
  std::unordered_map<Pair, std::int64_t> pair_counts_;
  std::unordered_map<Pair, std::vector<std::uint32_t>> where_;
  std::priority_queue<Candidate> heap_;
  std::vector<std::uint32_t> seen_;
};

}  // namespace

std::vector<std::string> learn_wordpiece_vocab(const std::vector<WordCount>& words, const BpeOptions& options) {
  return Merger(words, options).run();
}

}  // namespace kestrel::text
