#include "datasets/tfrecord/parse_example.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/tfrecord/example_codec.h"
#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "tests/datasets/tfrecord/tfrecord_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using kestrel::testing::floats;
using kestrel::testing::int64s;

const std::string& record() {
  static const std::string bytes = serialize_example(Element{
      {"ids", int64s({1, 2, 3, 4, 5, 6})},
      {"label", int64s({7})},
      {"x", floats({0.5f, 1.5f, 2.5f, 3.5f})},
      {"tags", Strings(std::vector<std::string>{"red", "green"})},
      {"title", Strings("only one")},
      {"no_ints", int64s({})},
  });
  return bytes;
}

TEST(ParseExample, FixedLenFeaturesTakeTheirShape) {
  const FeatureSpec spec{
      {"ids", FixedLenFeature{.shape = {2, 3}, .dtype = FeatureDType::int64}},
      {"label", FixedLenFeature{.shape = {}, .dtype = FeatureDType::int64}},
      {"x", FixedLenFeature{.shape = {4}, .dtype = FeatureDType::float32}},
      {"tags", FixedLenFeature{.shape = {2}, .dtype = FeatureDType::string}},
      {"title", FixedLenFeature{.shape = {}, .dtype = FeatureDType::string}},
  };
  const Element e = parse_example(record(), spec);
  EXPECT_EQ(e.keys(), (std::vector<std::string>{"ids", "label", "tags", "title", "x"}));
  EXPECT_EQ(e.tensor("ids").shape(), Shape({2, 3}));
  EXPECT_EQ(e.tensor("ids").dtype(), DType::int64);
  EXPECT_EQ(e.tensor("ids").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(e.tensor("label").shape(), Shape({}));
  EXPECT_EQ(e.tensor("label").item(), 7);
  EXPECT_EQ(e.tensor("x").dtype(), DType::float32);
  EXPECT_EQ(e.tensor("x").to_vector<float>(), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(e.strings("tags"), Strings(std::vector<std::string>{"red", "green"}));
  EXPECT_EQ(e.strings("title").scalar(), "only one");
  EXPECT_EQ(e.spec(), element_spec(spec));
}

TEST(ParseExample, VarLenFeaturesAreDenseOneDimensional) {
  const FeatureSpec spec{
      {"ids", VarLenFeature{.dtype = FeatureDType::int64}},
      {"x", VarLenFeature{.dtype = FeatureDType::float32}},
      {"tags", VarLenFeature{.dtype = FeatureDType::string}},
      {"no_ints", VarLenFeature{.dtype = FeatureDType::int64}},
      {"absent", VarLenFeature{.dtype = FeatureDType::string}},
  };
  const Element e = parse_example(record(), spec);
  EXPECT_EQ(e.tensor("ids").shape(), Shape({6}));
  EXPECT_EQ(e.tensor("x").shape(), Shape({4}));
  EXPECT_EQ(e.strings("tags").shape(), Shape({2}));
  EXPECT_EQ(e.tensor("no_ints").shape(), Shape({0}));
  EXPECT_EQ(e.tensor("no_ints").dtype(), DType::int64);
  EXPECT_EQ(e.strings("absent").shape(), Shape({0}));
  const ElementSpec want = element_spec(spec);
  EXPECT_EQ(want.at("ids").shape, std::vector<std::int64_t>{-1});
  EXPECT_TRUE(want.at("tags").is_string);
}

TEST(ParseExample, DefaultsFillMissingFeatures) {
  const FeatureSpec spec{
      {"weight",
       FixedLenFeature{
           .shape = {}, .dtype = FeatureDType::float32, .default_value = Tensor::scalar(1.0, DType::float32)}},
      {"mask",
       FixedLenFeature{.shape = {3}, .dtype = FeatureDType::int64, .default_value = Tensor::scalar(-1, DType::int64)}},
      {"pair", FixedLenFeature{.shape = {2},
                               .dtype = FeatureDType::int64,
                               .default_value = Tensor::from_vector<std::int32_t>({4, 5}, {2})}},
      {"lang", FixedLenFeature{.shape = {}, .dtype = FeatureDType::string, .default_value = Strings("en")}},
      {"label",
       FixedLenFeature{.shape = {}, .dtype = FeatureDType::int64, .default_value = Tensor::scalar(0, DType::int64)}},
  };
  const Element e = parse_example(record(), spec);
  EXPECT_EQ(e.tensor("weight").item(), 1.0);
  EXPECT_EQ(e.tensor("mask").to_vector<std::int64_t>(), (std::vector<std::int64_t>{-1, -1, -1}));
  EXPECT_EQ(e.tensor("pair").to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(e.tensor("pair").dtype(), DType::int64);
  EXPECT_EQ(e.strings("lang").scalar(), "en");
  EXPECT_EQ(e.tensor("label").item(), 7);  // present: the record's value, not the default
}

TEST(ParseExample, MissingRequiredFeatureNamesItAndTheFix) {
  const FeatureSpec spec{{"weight", FixedLenFeature{.shape = {}, .dtype = FeatureDType::float32}}};
  const std::string m = error_message<ValueError>([&] { parse_example(record(), spec); });
  EXPECT_TRUE(contains(m, "[parse_example] feature 'weight' is missing")) << m;
  EXPECT_TRUE(contains(m, "[ids, label, no_ints, tags, title, x]")) << m;
  EXPECT_TRUE(contains(m, "default_value")) << m;
  EXPECT_TRUE(contains(m, "VarLenFeature")) << m;
}

TEST(ParseExample, WrongTypeNamesTheFeatureAndTheDtypeToUse) {
  const std::pair<std::string, FeatureDType> cases[] = {
      {"ids", FeatureDType::float32}, {"x", FeatureDType::int64}, {"tags", FeatureDType::int64}};
  const std::string fixes[] = {"FeatureDType::int64", "FeatureDType::float32", "FeatureDType::string"};
  for (int i = 0; i < 3; ++i) {
    // Named, not a structured binding, which the lambda below captures (clang before 16 cannot).
    const std::string& name = cases[i].first;
    const FeatureDType dtype = cases[i].second;
    for (const FeatureConfig& config :
         {FeatureConfig(VarLenFeature{.dtype = dtype}), FeatureConfig(FixedLenFeature{.shape = {}, .dtype = dtype})}) {
      const std::string m = error_message<ValueError>([&] { parse_example(record(), {{name, config}}); });
      EXPECT_TRUE(contains(m, "feature '" + name + "' is a")) << m;
      EXPECT_TRUE(contains(m, "asks for " + to_string(dtype))) << m;
      EXPECT_TRUE(contains(m, "set its dtype to " + fixes[i])) << m;
    }
  }
}

TEST(ParseExample, WrongCountNamesTheFeatureShapeAndFix) {
  const FeatureSpec spec{{"ids", FixedLenFeature{.shape = {128}, .dtype = FeatureDType::int64}}};
  const std::string m = error_message<ValueError>([&] { parse_example(record(), spec); });
  EXPECT_TRUE(contains(m, "feature 'ids' has 6 values, but FixedLenFeature shape [128] needs 128")) << m;
  EXPECT_TRUE(contains(m, "VarLenFeature")) << m;
  const std::string s = error_message<ValueError>([&] {
    parse_example(record(), {{"tags", FixedLenFeature{.shape = {}, .dtype = FeatureDType::string}}});
  });
  EXPECT_TRUE(contains(s, "feature 'tags' has 2 values, but FixedLenFeature shape [] needs 1")) << s;
  // A present but empty list counts as zero values.
  const std::string z = error_message<ValueError>([&] {
    parse_example(record(), {{"no_ints", FixedLenFeature{.shape = {}, .dtype = FeatureDType::int64}}});
  });
  EXPECT_TRUE(contains(z, "has 0 values")) << z;
}

TEST(ParseExample, BadSpecsFailBeforeParsing) {
  std::string m = error_message<ValueError>([] {
    parse_example_fn({{"ids", FixedLenFeature{.shape = {-1}, .dtype = FeatureDType::int64}}});
  });
  EXPECT_TRUE(contains(m, "feature 'ids'")) << m;
  EXPECT_TRUE(contains(m, "use VarLenFeature")) << m;
  m = error_message<ValueError>([] {
    parse_example_fn(
        {{"w", FixedLenFeature{
                   .shape = {}, .dtype = FeatureDType::int64, .default_value = Tensor::scalar(0.5, DType::float32)}}});
  });
  EXPECT_TRUE(contains(m, "feature 'w': the default_value of an int64")) << m;
  m = error_message<ValueError>([] {
    parse_example_fn(
        {{"s", FixedLenFeature{
                   .shape = {}, .dtype = FeatureDType::string, .default_value = Tensor::scalar(0, DType::int64)}}});
  });
  EXPECT_TRUE(contains(m, "data::Strings")) << m;
  m = error_message<ValueError>([] {
    parse_example_fn({{"v", FixedLenFeature{.shape = {3},
                                            .dtype = FeatureDType::float32,
                                            .default_value = Tensor::zeros({2}, DType::float32)}}});
  });
  EXPECT_TRUE(contains(m, "has 2 values; give one (broadcast) or 3 for shape [3]")) << m;
}

TEST(ParseExample, NotAnExampleRaises) {
  const std::string m = error_message<ValueError>([] { parse_example(std::string("\x0a\xff", 2), {}); });
  EXPECT_TRUE(contains(m, "not a serialized tf.train.Example")) << m;
}

TEST(ParseExample, FnParsesTheRecordKeyInADatasetMap) {
  const FeatureSpec spec{{"label", FixedLenFeature{.shape = {}, .dtype = FeatureDType::int64}},
                         {"x", VarLenFeature{.dtype = FeatureDType::float32}}};
  std::vector<std::string> records;
  for (int i = 0; i < 3; ++i) {
    records.push_back(serialize_example(Element{{"label", int64s({i})}, {"x", floats(std::vector<float>(i, 1.0f))}}));
  }
  auto ds = Dataset::from_tensor_slices(Element{{"record", Strings(records)}}).map(parse_example_fn(spec));
  const auto elements = ds.to_vector();
  ASSERT_EQ(elements.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(elements[i].tensor("label").item(), i);
    EXPECT_EQ(elements[i].tensor("x").numel(), i);
    EXPECT_FALSE(elements[i].contains("record"));
  }
  // Another key, and the error when the element lacks it.
  const auto fn = parse_example_fn(spec, "bytes");
  EXPECT_EQ(fn(Element{{"bytes", Strings(records[2])}}).tensor("label").item(), 2);
  const std::string m = error_message<ValueError>([&] { fn(Element{{"record", Strings(records[2])}}); });
  EXPECT_TRUE(contains(m, "bytes")) << m;
}

}  // namespace
}  // namespace kestrel::data
