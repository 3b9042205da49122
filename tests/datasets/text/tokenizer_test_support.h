// Test support for the tokenizer tests: small vocabularies with BERT's special tokens first.
//
//   auto tok = make_tokenizer({"hello", "world", ","});   // ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 hello=5 ...
//   EXPECT_EQ(tok.tokenize("Hello, world"), (Tokens{"hello", ",", "world"}));
#pragma once

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/text/wordpiece_tokenizer.h"

namespace kestrel::testing {

using Tokens = std::vector<std::string>;
using Ids = std::vector<std::int64_t>;

inline constexpr std::int64_t kPad = 0, kUnk = 1, kCls = 2, kSep = 3, kMask = 4;

/// The five special tokens, then `tokens`.
inline std::vector<std::string> bert_vocab(const std::vector<std::string>& tokens) {
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  vocab.insert(vocab.end(), tokens.begin(), tokens.end());
  return vocab;
}

inline text::WordPieceTokenizer make_tokenizer(const std::vector<std::string>& tokens,
                                               text::TokenizerOptions options = {}) {
  return text::WordPieceTokenizer(bert_vocab(tokens), std::move(options));
}

/// A fresh directory under the system's temp directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kestrel_text_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// Writes `content` byte for byte to `name`; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream out(file(name), std::ios::binary);
    out << content;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace kestrel::testing
