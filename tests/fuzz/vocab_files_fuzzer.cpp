// The files a WordPiece vocabulary comes in, from arbitrary bytes: vocab.txt when the first byte
// is even, Hugging Face's tokenizer.json when it is odd. What loads is made into a tokenizer and
// used once.
#include <cstdint>

#include "datasets/text/vocab_files.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool json = (data[0] & 1) != 0;
  const std::string path =
      fuzz::write_input_file(fuzz::bytes(data + 1, size - 1), json ? "-tokenizer.json" : "-vocab.txt");
  try {
    const auto tok =
        json ? text::WordPieceTokenizer::from_tokenizer_json(path) : text::WordPieceTokenizer::from_vocab_file(path);
    tok.decode(tok.encode("Hello, w\u00f6rld! unaffable [MASK]", "a pair").input_ids);
  } catch (const Error&) {
  }
  return 0;
}
