// vocab.txt and tokenizer.json: reading, writing, and the errors that name the file.
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/vocab_files.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

const std::string kSpecials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";

TEST(VocabFile, OneTokenPerLineWithAnyLineEnding) {
  TempDir dir;
  // "\r\n" and "\r" end lines as "\n" does; a token keeps its inner and trailing spaces.
  const std::string path = dir.write("vocab.txt", kSpecials + "hello\r\nworld\r##s\n a b \n\nlast");
  EXPECT_EQ(text::read_vocab_file(path),
            (Tokens{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", " a b ", "", "last"}));
  auto tok = text::WordPieceTokenizer::from_vocab_file(path);
  EXPECT_EQ(tok.vocab_size(), 11);
  EXPECT_EQ(tok.tokenize("Hello worlds"), (Tokens{"hello", "world", "##s"}));
}

TEST(VocabFile, SaveAndReloadRoundTrips) {
  TempDir dir;
  auto tok = make_tokenizer({"hello", "##s", "caf\u00e9"});
  tok.save_vocabulary(dir.file("vocab.txt"));
  auto again = text::WordPieceTokenizer::from_vocab_file(dir.file("vocab.txt"));
  EXPECT_EQ(again.vocab(), tok.vocab());
}

TEST(VocabFile, OptionsApply) {
  TempDir dir;
  const std::string path = dir.write("vocab.txt", kSpecials + "Hello\n");
  auto tok = text::WordPieceTokenizer::from_vocab_file(path, {.do_lower_case = false});
  EXPECT_EQ(tok.tokenize("Hello hello"), (Tokens{"Hello", "[UNK]"}));
}

TEST(VocabFile, ErrorsNameTheFile) {
  TempDir dir;
  const std::string missing = dir.file("missing.txt");
  std::string message = error_message<IOError>([&] { text::WordPieceTokenizer::from_vocab_file(missing); });
  EXPECT_TRUE(contains(message, missing)) << message;

  const std::string bad = dir.write("bad.txt", kSpecials + "ok\nbad\xff\n");
  message = error_message<IOError>([&] { text::read_vocab_file(bad); });
  EXPECT_TRUE(contains(message, bad)) << message;
  EXPECT_TRUE(contains(message, "line 7")) << message;

  const std::string no_mask = dir.write("no_mask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  message = error_message<ValueError>([&] { text::WordPieceTokenizer::from_vocab_file(no_mask); });
  EXPECT_TRUE(contains(message, "[MASK]")) << message;

  message = error_message<ValueError>([] { text::write_vocab_file("/unused", {"a\nb"}); });
  EXPECT_TRUE(contains(message, "line break")) << message;
}

// A tokenizer.json as Hugging Face's tokenizers library writes it for a cased BERT.
constexpr const char* kTokenizerJson = R"({
  "version": "1.0",
  "truncation": {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0},
  "padding": null,
  "added_tokens": [
    {"id": 0, "content": "<pad>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 7, "content": "[NEW]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": true, "lowercase": false},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<cls>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "<sep>", "type_id": 0}}],
    "pair": [],
    "special_tokens": {}
  },
  "decoder": {"type": "WordPiece", "prefix": "@@", "cleanup": true},
  "model": {
    "type": "WordPiece",
    "unk_token": "<unk>",
    "continuing_subword_prefix": "@@",
    "max_input_chars_per_word": 6,
    "vocab": {"<pad>": 0, "<unk>": 1, "<cls>": 2, "<sep>": 3, "[MASK]": 4, "Hello": 5, "@@s": 6}
  }
})";

TEST(TokenizerJson, SettingsComeFromTheFile) {
  TempDir dir;
  text::TokenizerJson json = text::read_tokenizer_json(dir.write("tokenizer.json", kTokenizerJson));
  EXPECT_EQ(json.vocab, (Tokens{"<pad>", "<unk>", "<cls>", "<sep>", "[MASK]", "Hello", "@@s", "[NEW]"}));
  EXPECT_FALSE(json.options.do_lower_case);
  EXPECT_EQ(json.options.strip_accents, std::optional<bool>(true));
  EXPECT_EQ(json.options.unk_token, "<unk>");
  EXPECT_EQ(json.options.cls_token, "<cls>");
  EXPECT_EQ(json.options.sep_token, "<sep>");
  EXPECT_EQ(json.options.max_input_chars_per_word, 6);
  EXPECT_EQ(json.options.model_max_length, 16);
  EXPECT_EQ(json.continuing_subword_prefix, "@@");
  // Special added tokens without a BERT role ("<pad>" has none until "padding" names it).
  EXPECT_EQ(json.options.additional_special_tokens, (Tokens{"<pad>", "[NEW]"}));
}

TEST(TokenizerJson, TokenizerUsesThem) {
  TempDir dir;
  const std::string path = dir.write("tokenizer.json", kTokenizerJson);
  // pad_token is not named in this file, so the default "[PAD]" would be missing: a ValueError.
  EXPECT_TRUE(
      contains(error_message<ValueError>([&] { text::WordPieceTokenizer::from_tokenizer_json(path); }), "[PAD]"));
  std::string with_padding = kTokenizerJson;
  with_padding.replace(with_padding.find("\"padding\": null"), 15, R"("padding": {"pad_token": "<pad>"})");
  auto tok = text::WordPieceTokenizer::from_tokenizer_json(dir.write("padded.json", with_padding));
  EXPECT_EQ(tok.pad_token_id(), 0);
  // Cased, accents stripped, "@@" continuations, words over 6 characters unknown.
  EXPECT_EQ(tok.tokenize("H\u00e9llos hello Hellosss"), (Tokens{"Hello", "@@s", "<unk>", "<unk>"}));
  EXPECT_EQ(tok.encode("Hello").input_ids, (Ids{2, 5, 3}));
  EXPECT_EQ(tok.decode({2, 5, 6, 3}, true), "Hellos");
  // An added special token is never split and counts as special.
  EXPECT_EQ(tok.tokenize("Hello[NEW]Hello"), (Tokens{"Hello", "[NEW]", "Hello"}));
  EXPECT_TRUE(tok.is_special_id(7));
}

TEST(TokenizerJson, ErrorsNameTheFile) {
  TempDir dir;
  const std::string broken = dir.write("broken.json", "{\"model\": ");
  std::string message = error_message<ValueError>([&] { text::read_tokenizer_json(broken); });
  EXPECT_TRUE(contains(message, broken)) << message;
  EXPECT_TRUE(contains(message, "not valid JSON")) << message;

  const std::string bpe = dir.write("bpe.json", R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})");
  message = error_message<ValueError>([&] { text::WordPieceTokenizer::from_tokenizer_json(bpe); });
  EXPECT_TRUE(contains(message, bpe)) << message;
  EXPECT_TRUE(contains(message, "'BPE'")) << message;

  // "b" is listed twice, so id 2 is within the count of listed ids and the gap itself is found.
  const std::string gap = dir.write("gap.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0, "b": 2}},
    "added_tokens": [{"id": 2, "content": "b"}],
    "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  message = error_message<ValueError>([&] { text::read_tokenizer_json(gap); });
  EXPECT_TRUE(contains(message, "no token has id 1")) << message;

  const std::string nfkc = dir.write("nfkc.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}},
    "normalizer": {"type": "NFKC"}, "pre_tokenizer": {"type": "BertPreTokenizer"}})");
  message = error_message<ValueError>([&] { text::read_tokenizer_json(nfkc); });
  EXPECT_TRUE(contains(message, "'NFKC'")) << message;

  message = error_message<IOError>([&] { text::read_tokenizer_json(dir.file("absent.json")); });
  EXPECT_TRUE(contains(message, dir.file("absent.json"))) << message;
}

// Numbers that nlohmann's reader or get<std::int64_t> cannot hold once escaped as std::
// exceptions, sized the vocabulary by the id, or converted a float to an integer with undefined
// behaviour; each is now a ValueError naming the file.
TEST(TokenizerJson, NumbersOutOfRangeAreValueErrors) {
  TempDir dir;
  const auto with_model = [](const std::string& vocab, const std::string& more = "") {
    return R"({"model": {"type": "WordPiece", "vocab": )" + vocab + more +
           R"(}, "normalizer": {"type": "BertNormalizer"}, "pre_tokenizer": {"type": "BertPreTokenizer"}})";
  };
  const std::pair<std::string, const char*> cases[] = {
      {with_model(R"({"a": 1e999})"), "not valid JSON"},
      {with_model(R"({"a": 100000000})"), "model.vocab id of 'a' is 100000000, but the file gives ids to 1 tokens"},
      {with_model(R"({"a": 9000000000000000000})"), "is 9000000000000000000, but the file gives ids to 1 tokens"},
      {with_model(R"({"a": -1})"), "model.vocab id of 'a' is -1; it must lie in [0, "},
      {with_model(R"({"a": 4.9e19})"), "model.vocab id of 'a' is 4.9e+19; it must be a whole number"},
      {with_model(R"({"a": 0})", R"(, "max_input_chars_per_word": 1e300)"),
       "model.max_input_chars_per_word is 1e+300; it must be a whole number"},
      {with_model(R"({"a": 0})", R"(, "max_input_chars_per_word": -2)"), "model.max_input_chars_per_word is -2"},
  };
  for (const auto& [json, want] : cases) {
    const std::string path = dir.write("numbers.json", json);
    const std::string m = error_message<ValueError>([&] { text::read_tokenizer_json(path); });
    EXPECT_TRUE(contains(m, path)) << json << " -> " << m;
    EXPECT_TRUE(contains(m, want)) << json << " -> " << m;
  }
  const std::string truncation =
      dir.write("truncation.json", R"({"truncation": {"max_length": 1e300}, )" + with_model(R"({"a": 0})").substr(1));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { text::read_tokenizer_json(truncation); }),
                       "truncation.max_length is 1e+300"));
}

}  // namespace
}  // namespace kestrel::testing
