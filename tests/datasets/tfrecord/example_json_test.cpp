#include "datasets/tfrecord/example_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "datasets/tfrecord/example_codec.h"
#include "framework/core/error.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::floats;
using kestrel::testing::int64s;

TEST(ExampleJson, WritesTheDocumentedFormat) {
  const Element e{{"ids", int64s({101, -1})},
                  {"x", floats({0.1f, 1024.0f})},
                  {"text", Strings(std::vector<std::string>{"hi", std::string("\xff\x00\x01", 3)})}};
  EXPECT_EQ(example_to_json(example_from_element(e)),
            R"({"ids":{"int64_list":[101,-1]},"text":{"bytes_list":["hi",{"base64":"/wAB"}]},)"
            R"("x":{"float_list":[0.1,1024.0]}})");
}

TEST(ExampleJson, RoundTripsEveryValue) {
  const Element e{
      {"ids", int64s({INT64_MIN, 0, INT64_MAX})},
      {"x", floats({-0.0f, 1e-45f, 3.4028235e38f, 0.3f, -7.25f})},
      {"b", Strings(std::vector<std::string>{"", "caf\xc3\xa9", "\xe2\x82\xac", std::string(1, '\0'), "a\"b\\",
                                             "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xe2\x82"})},
      {"none", int64s({})}};
  const example::Example ex = example_from_element(e);
  const example::Example back = example_from_json(example_to_json(ex));
  EXPECT_EQ(serialize_example(back), serialize_example(ex));
  EXPECT_TRUE(element_from_example(back) == e);
}

TEST(ExampleJson, NonFiniteFloatsAreStrings) {
  const Element e{{"x", floats({NAN, INFINITY, -INFINITY})}};
  const std::string line = example_to_json(example_from_element(e));
  EXPECT_EQ(line, R"({"x":{"float_list":["NaN","Infinity","-Infinity"]}})");
  const auto v = element_from_example(example_from_json(line)).tensor("x").to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], INFINITY);
  EXPECT_EQ(v[2], -INFINITY);
}

TEST(ExampleJson, FeaturesWithoutAListAreEmptyObjects) {
  example::Example ex;
  (*ex.mutable_features()->mutable_feature())["unset"];
  EXPECT_EQ(example_to_json(ex), R"({"unset":{}})");
  EXPECT_EQ(serialize_example(example_from_json(R"({"unset":{}})")), serialize_example(ex));
}

// The list's kind and values were once read through a reference into a destroyed iterator
// (AddressSanitizer: stack-use-after-scope on every call).
TEST(ExampleJson, ReadsEachFeaturesListKindAndValues) {
  const example::Example ex = example_from_json(R"({"a":{"int64_list":[]},"b":{"float_list":[2.5]}})");
  const auto& features = ex.features().feature();
  EXPECT_EQ(features.at("a").kind_case(), example::Feature::kInt64List);
  EXPECT_EQ(features.at("a").int64_list().value_size(), 0);
  ASSERT_EQ(features.at("b").float_list().value_size(), 1);
  EXPECT_EQ(features.at("b").float_list().value(0), 2.5f);
}

TEST(ExampleJson, BadInputNamesTheFeatureAndTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"a": {"int64_list": [1.5]}})", "feature 'a': int64_list values must be integers"},
      {R"({"a": {"int64_list": [18446744073709551615]}})", "does not fit in int64"},
      {R"({"b": {"float_list": ["one"]}})", "feature 'b': float_list values must be numbers"},
      {R"({"c": {"bytes_list": [3]}})", "feature 'c': bytes_list values must be strings"},
      {R"({"c": {"bytes_list": [{"base64": "abc"}]}})", "not valid standard base64"},
      {R"({"d": {"string_list": []}})", "feature 'd': unknown list \"string_list\""},
      {R"({"e": {"int64_list": [], "float_list": []}})", "feature 'e': expected an object with one key"},
      {R"({"f": {"int64_list": 5}})", "feature 'f': the values of \"int64_list\" must be an array"},
      {R"([1, 2])", "expected a JSON object of features"},
      {R"({"g": )", "not valid JSON"},
      {R"({"h": {"float_list": [1e999]}})", "not valid JSON"},  // nlohmann's out_of_range, not parse_error
  };
  for (const auto& [json, want] : cases) {
    const std::string input = json;  // a copy: clang before 16 cannot capture a structured binding
    const std::string m = error_message<ValueError>([&] { example_from_json(input); });
    EXPECT_TRUE(contains(m, want)) << json << " -> " << m;
  }
}

TEST(ExampleJson, BytesToJsonMarksBinary) {
  EXPECT_EQ(bytes_to_json("plain"), "\"plain\"");
  EXPECT_EQ(bytes_to_json(std::string("\x80", 1)), R"({"base64":"gA=="})");
  EXPECT_EQ(bytes_to_json(""), "\"\"");
}

}  // namespace
}  // namespace kestrel::data
