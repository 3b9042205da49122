#include "datasets/tfrecord/example_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::floats;
using kestrel::testing::int64s;

TEST(ExampleCodec, EachDtypeGoesToItsList) {
  const Element e{{"ids", int64s({1, -2, 300})},
                  {"small", Tensor::from_vector<std::int32_t>({7, 8}, {2})},
                  {"flags", Tensor::from_vector<bool>({true, false}, {2})},
                  {"x", floats({0.5f})},
                  {"half", Tensor::full({2}, 1.5, DType::bfloat16)},
                  {"text", Strings("hello")}};
  const example::Example ex = example_from_element(e);
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(f.at("ids").kind_case(), example::Feature::kInt64List);
  EXPECT_EQ(f.at("ids").int64_list().value_size(), 3);
  EXPECT_EQ(f.at("ids").int64_list().value(1), -2);
  EXPECT_EQ(f.at("small").int64_list().value(1), 8);
  EXPECT_EQ(f.at("flags").int64_list().value(0), 1);
  EXPECT_EQ(f.at("x").float_list().value(0), 0.5f);
  EXPECT_EQ(f.at("half").float_list().value(1), 1.5f);
  EXPECT_EQ(f.at("text").bytes_list().value(0), "hello");
}

TEST(ExampleCodec, ShapesFlattenInRowMajorOrder) {
  const Element e{{"m", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
                  {"s", Strings({"a", "b", "c", "d"}, Shape{2, 2})},
                  {"scalar", Tensor::scalar(9, DType::int64)}};
  const Element back = decode_example(serialize_example(e));
  EXPECT_EQ(back.tensor("m").shape(), Shape({6}));
  EXPECT_EQ(back.tensor("m").to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(back.strings("s").values(), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(back.tensor("scalar").to_vector<std::int64_t>(), std::vector<std::int64_t>{9});
}

TEST(ExampleCodec, RoundTripsOneDimensionalElements) {
  const Element e{{"ids", int64s({INT64_MIN, 0, INT64_MAX})},
                  {"empty_ints", int64s({})},
                  {"empty_text", Strings(std::vector<std::string>{})},
                  {"x", floats({-0.0f, 1e-30f, 3.4e38f})},
                  {"bytes", Strings(std::vector<std::string>{std::string("\0\xff", 2), ""})}};
  EXPECT_TRUE(decode_example(serialize_example(e)) == e);
}

TEST(ExampleCodec, SerializationIsDeterministic) {
  // Same content, built in different orders: the same bytes, features sorted by name.
  const Element a{{"b", int64s({1})}, {"a", floats({2})}};
  Element b;
  b.set("a", floats({2}));
  b.set("b", int64s({1}));
  EXPECT_EQ(serialize_example(a), serialize_example(b));
  const std::string bytes = serialize_example(a);
  EXPECT_LT(bytes.find("\x0a\x01"
                       "a"),
            bytes.find("\x0a\x01"
                       "b"));
}

TEST(ExampleCodec, AFeatureWithNoListDecodesAsEmpty) {
  example::Example ex;
  (*ex.mutable_features()->mutable_feature())["nothing"];
  const Element e = element_from_example(ex);
  EXPECT_EQ(e.tensor("nothing").numel(), 0);
}

TEST(ExampleCodec, BytesThatAreNotAnExampleRaise) {
  const std::string m = error_message<ValueError>([] { decode_example(std::string("\xff\xff\xff", 3)); });
  EXPECT_TRUE(contains(m, "[parse_example]")) << m;
  EXPECT_TRUE(contains(m, "not a serialized tf.train.Example")) << m;
  EXPECT_TRUE(decode_example("").values().empty());  // the empty Example
}

}  // namespace
}  // namespace kestrel::data
