// UTF-8 decoding: errors name the byte offset; replacement follows Python's errors="replace".
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/utf8.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

using text::InvalidUtf8;
namespace utf8 = text::utf8;

std::u32string replaced(const std::string& bytes) { return utf8::decode(bytes, InvalidUtf8::replace, "test"); }

TEST(Utf8, RoundTripsEveryLength) {
  const std::string bytes = "a\u00e9\u4e2d\U0001F600";
  const std::u32string cps = utf8::decode(bytes, InvalidUtf8::error, "test");
  EXPECT_EQ(cps, U"a\u00e9\u4e2d\U0001F600");
  EXPECT_EQ(utf8::encode(cps), bytes);
  EXPECT_EQ(utf8::find_invalid(bytes), std::string::npos);
}

TEST(Utf8, ErrorNamesTheOffsetAndBytes) {
  const std::string message = error_message<ValueError>([] { utf8::decode("ab\xC3(", InvalidUtf8::error, "[ctx]"); });
  EXPECT_TRUE(contains(message, "[ctx]")) << message;
  EXPECT_TRUE(contains(message, "byte offset 2")) << message;
  EXPECT_TRUE(contains(message, "0xC3")) << message;
  EXPECT_TRUE(contains(message, "InvalidUtf8::replace")) << message;
  EXPECT_EQ(utf8::find_invalid("ab\xC3("), 2u);
}

TEST(Utf8, ReplacementPerMaximalSubpart) {
  // Each expectation is what Python's bytes.decode("utf-8", "replace") gives.
  EXPECT_EQ(replaced("a\xE2\x82"
                     "b"),
            U"a\uFFFDb");                                                // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(replaced("\xF0\x9F\x98"), U"\uFFFD");                        // truncated 4-byte sequence at the end
  EXPECT_EQ(replaced("\xED\xA0\x80"), U"\uFFFD\uFFFD\uFFFD");            // an encoded surrogate: three
  EXPECT_EQ(replaced("\xC0\xAF"), U"\uFFFD\uFFFD");                      // overlong: C0 is never valid
  EXPECT_EQ(replaced("\xF0\x80\x80"), U"\uFFFD\uFFFD\uFFFD");            // F0 needs 90..BF next
  EXPECT_EQ(replaced("\xF4\x90\x80\x80"), U"\uFFFD\uFFFD\uFFFD\uFFFD");  // past U+10FFFF
  EXPECT_EQ(replaced("\x80x\xFF"), U"\uFFFDx\uFFFD");                    // stray continuation, invalid byte
}

TEST(Utf8, TokenizerPolicy) {
  auto strict = make_tokenizer({"caf", "ok"});
  const std::string message = error_message<ValueError>([&] { strict.tokenize("ok caf\xC3 ok"); });
  EXPECT_TRUE(contains(message, "[WordPieceTokenizer]")) << message;
  EXPECT_TRUE(contains(message, "byte offset 6")) << message;
  // Replaced, the bad byte becomes U+FFFD, which BERT's cleaning then removes.
  auto lenient = make_tokenizer({"caf", "ok", "cafok"}, {.invalid_utf8 = InvalidUtf8::replace});
  EXPECT_EQ(lenient.tokenize("ok caf\xC3 ok"), (Tokens{"ok", "caf", "ok"}));
  EXPECT_EQ(lenient.tokenize("caf\xFFok"), (Tokens{"cafok"}));
}

}  // namespace
}  // namespace kestrel::testing
