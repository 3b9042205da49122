#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "framework/data/dataset_node.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

std::vector<std::int64_t> values_of(const Dataset& ds, const std::string& key = "value") {
  std::vector<std::int64_t> out;
  for (const Element& e : ds) out.push_back(e.tensor(key).to_vector<std::int64_t>().at(0));
  return out;
}

TEST(FromTensorSlices, SlicesEveryValueAlongTheFirstDimension) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor y = Tensor::from_vector<std::int64_t>({7, 8, 9}, {3});
  Dataset ds = Dataset::from_tensor_slices({{"x", x}, {"y", y}, {"name", Strings({"a", "b", "c"})}});
  EXPECT_EQ(ds.cardinality(), 3);
  EXPECT_EQ(to_string(ds.element_spec()), "{name: string[], x: float32[2], y: int64[]}");
  std::vector<Element> all = ds.to_vector();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].tensor("x").to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(all[2].tensor("y").to_vector<std::int64_t>(), (std::vector<std::int64_t>{9}));
  EXPECT_EQ(all[0].strings("name").scalar(), "a");
}

TEST(FromTensorSlices, RejectsValuesWithDifferentRowCounts) {
  std::string message = testing::error_message<ShapeError>([] {
    Dataset::from_tensor_slices({{"x", Tensor::zeros({3, 2})}, {"y", Tensor::zeros({4})}});
  });
  EXPECT_TRUE(testing::contains(message, "'y' has 4 rows")) << message;
  EXPECT_TRUE(testing::contains(message, "same first dimension")) << message;
}

TEST(FromTensorSlices, RejectsUndefinedTensors) {
  std::string message = testing::error_message<ValueError>([] { Dataset::from_tensor_slices({{"x", Tensor()}}); });
  EXPECT_TRUE(testing::contains(message, "'x' is an undefined tensor")) << message;
}

TEST(FromTensorSlices, RejectsScalars) {
  std::string message = testing::error_message<ShapeError>([] {
    Dataset::from_tensor_slices({{"x", Tensor::scalar(1.0)}});
  });
  EXPECT_TRUE(testing::contains(message, "'x' is a scalar")) << message;
}

TEST(Range, CountsLikePython) {
  EXPECT_EQ(values_of(Dataset::range(4)), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values_of(Dataset::range(2, 9, 3)), (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_EQ(values_of(Dataset::range(5, 0, -2)), (std::vector<std::int64_t>{5, 3, 1}));
  EXPECT_EQ(Dataset::range(2, 9, 3).cardinality(), 3);
  EXPECT_EQ(Dataset::range(0).cardinality(), 0);
}

TEST(FromGenerator, CallsTheFactoryOncePerPass) {
  int passes = 0;
  Dataset ds = Dataset::from_generator(
      [&passes]() -> Generator {
        ++passes;
        return [i = 0]() mutable -> std::optional<Element> {
          if (i == 3) return std::nullopt;
          return Element{{"value", Tensor::from_vector<std::int64_t>({i++}, Shape())}};
        };
      },
      {{"value", ValueSpec{{}, DType::int64, false}}});
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(values_of(ds), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(values_of(ds), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(passes, 2);
}

class TextLineDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kestrel_textline_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& content) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(TextLineDatasetTest, YieldsEachLineOfEachFileInOrder) {
  std::string a = write("a.txt", "first\nsecond\r\n\nlast without newline");
  std::string b = write("b.txt", "from b\n");
  std::vector<std::string> lines;
  for (const Element& e : TextLineDataset({a, b})) lines.push_back(e.strings("text").scalar());
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "second", "", "last without newline", "from b"}));
}

TEST_F(TextLineDatasetTest, AMissingFileNamesTheFileAndIgnoreErrorsSkipsIt) {
  std::string a = write("a.txt", "one\ntwo\n");
  std::string missing = (dir_ / "missing.txt").string();
  std::string message = testing::error_message<IOError>([&] { TextLineDataset({missing, a}).to_vector(); });
  EXPECT_TRUE(testing::contains(message, "missing.txt")) << message;

  Dataset skipping = TextLineDataset({missing, a}).ignore_errors();
  EXPECT_EQ(skipping.to_vector().size(), 2u);
  EXPECT_EQ(skipping.ignored_errors(), 1);
}

TEST_F(TextLineDatasetTest, ADirectoryIsAnErrorNotAnEmptyFile) {
  std::string message = testing::error_message<IOError>([&] { TextLineDataset({dir_.string()}).to_vector(); });
  EXPECT_TRUE(testing::contains(message, "not a regular file")) << message;
}

TEST_F(TextLineDatasetTest, NoFilesIsAValueErrorAndTheFilesAreItsShards) {
  std::string message = testing::error_message<ValueError>([] { TextLineDataset({}); });
  EXPECT_TRUE(testing::contains(message, "TextLineDataset: no files given")) << message;

  std::string a = write("a.txt", "one\n");
  Dataset ds = TextLineDataset({a, a});
  EXPECT_EQ(ds.node()->files(), (std::vector<std::string>{a, a}));
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(to_string(ds.element_spec()), "{text: string[]}");
}

TEST(Element, MissingKeyListsTheKeysPresent) {
  Element e{{"input_ids", Tensor::zeros({3}, DType::int64)}, {"labels", Tensor::scalar(1)}};
  std::string message = testing::error_message<ValueError>([&] { e.tensor("attention_mask"); });
  EXPECT_TRUE(testing::contains(message, "no key 'attention_mask'")) << message;
  EXPECT_TRUE(testing::contains(message, "[input_ids, labels]")) << message;
  std::string type_message = testing::error_message<TypeError>([&] {
    Element text{{"text", Strings("hi")}};
    text.tensor("text");
  });
  EXPECT_TRUE(testing::contains(type_message, "holds strings")) << type_message;
}

TEST(Dataset, IteratorsOutliveTheDatasetValue) {
  std::unique_ptr<Iterator> it = Dataset::range(3).map([](Element e) { return e; }).make_iterator();
  int count = 0;
  while (it->next()) ++count;
  EXPECT_EQ(count, 3);
}

}  // namespace
}  // namespace kestrel::data
