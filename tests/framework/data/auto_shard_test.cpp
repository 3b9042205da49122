#include "framework/data/auto_shard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"
#include "tests/framework/data/dataset_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using testing_util::ragged;

Dataset with_policy(const Dataset& ds, AutoShardPolicy policy) {
  Options options;
  options.experimental_distribute.auto_shard_policy = policy;
  return ds.with_options(options);
}

/// Every line of a dataset of {"text"} batches (or single lines), in order.
std::vector<std::string> lines_of(const Dataset& ds) {
  std::vector<std::string> out;
  for (const Element& e : ds) {
    const std::vector<std::string>& values = e.strings("text").values();
    out.insert(out.end(), values.begin(), values.end());
  }
  return out;
}

/// The number of rows of each batch.
std::vector<std::int64_t> batch_rows(const Dataset& ds, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const Element& e : ds) {
    const Value& value = e.at(key);
    out.push_back(std::holds_alternative<Strings>(value) ? std::get<Strings>(value).size()
                                                         : std::get<Tensor>(value).shape()[0]);
  }
  return out;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Four text files f0..f3 of three lines each ("f2 line 1"), in a fresh temp dir.
class AutoShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("kestrel_auto_shard_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (int f = 0; f < 4; ++f) {
      std::string content;
      for (int l = 0; l < 3; ++l) content += lines_of_file(f)[static_cast<std::size_t>(l)] + "\n";
      files_.push_back(write("f" + std::to_string(f) + ".txt", content));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::vector<std::string> lines_of_file(int f) {
    std::vector<std::string> out;
    for (int l = 0; l < 3; ++l) out.push_back("f" + std::to_string(f) + " line " + std::to_string(l));
    return out;
  }
  static std::vector<std::string> lines_of_files(std::initializer_list<int> fs) {
    std::vector<std::string> out;
    for (int f : fs) {
      std::vector<std::string> lines = lines_of_file(f);
      out.insert(out.end(), lines.begin(), lines.end());
    }
    return out;
  }

  std::filesystem::path dir_;
  std::vector<std::string> files_;
};

TEST_F(AutoShardTest, FileGivesEachWorkerItsOwnFilesInBatchesOfItsShare) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::file);
  ShardedDataset w0 = auto_shard(global, 2, 0);
  ShardedDataset w1 = auto_shard(global, 2, 1);
  EXPECT_EQ(w0.policy, AutoShardPolicy::file);
  EXPECT_TRUE(w0.per_worker());
  EXPECT_EQ(w0.fallback_reason, "");

  // Worker i reads files i, i + 2: its lines in file order.
  EXPECT_EQ(lines_of(w0.dataset), lines_of_files({0, 2}));
  EXPECT_EQ(lines_of(w1.dataset), lines_of_files({1, 3}));
  EXPECT_EQ(batch_rows(w0.dataset, "text"), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(batch_rows(w1.dataset, "text"), (std::vector<std::int64_t>{2, 2, 2}));

  std::vector<std::string> both = lines_of(w0.dataset);
  std::vector<std::string> theirs = lines_of(w1.dataset);
  both.insert(both.end(), theirs.begin(), theirs.end());
  EXPECT_EQ(sorted(both), sorted(lines_of_files({0, 1, 2, 3})));  // every line exactly once
  EXPECT_EQ(w0.dataset.node()->input()->input()->files(), (std::vector<std::string>{files_[0], files_[2]}));
}

TEST_F(AutoShardTest, FileWithFourWorkersGivesOneFileEach) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::file);
  for (int i = 0; i < 4; ++i) {
    ShardedDataset mine = auto_shard(global, 4, i);
    EXPECT_EQ(lines_of(mine.dataset), lines_of_files({i}));
    EXPECT_EQ(batch_rows(mine.dataset, "text"), (std::vector<std::int64_t>{1, 1, 1}));
  }
}

TEST_F(AutoShardTest, OffGivesEveryWorkerEveryLineInBatchesOfItsShare) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::off);
  for (int i = 0; i < 2; ++i) {
    ShardedDataset mine = auto_shard(global, 2, i);
    EXPECT_EQ(mine.policy, AutoShardPolicy::off);
    EXPECT_TRUE(mine.per_worker());
    EXPECT_EQ(lines_of(mine.dataset), lines_of_files({0, 1, 2, 3}));
    EXPECT_EQ(batch_rows(mine.dataset, "text"), std::vector<std::int64_t>(6, 2));
  }
}

TEST_F(AutoShardTest, OffNeedsNoFiles) {
  Dataset global = with_policy(Dataset::range(8).batch(4), AutoShardPolicy::off);
  ShardedDataset mine = auto_shard(global, 2, 1);
  EXPECT_EQ(testing_util::firsts(mine.dataset), (std::vector<std::int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(mine.dataset.cardinality(), 4);
}

TEST_F(AutoShardTest, DataLeavesTheDatasetUnchanged) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::data);
  ShardedDataset mine = auto_shard(global, 2, 1);
  EXPECT_EQ(mine.policy, AutoShardPolicy::data);
  EXPECT_FALSE(mine.per_worker());
  EXPECT_EQ(mine.dataset.node(), global.node());
  EXPECT_EQ(batch_rows(mine.dataset, "text"), (std::vector<std::int64_t>{4, 4, 4}));
}

TEST_F(AutoShardTest, OneWorkerLeavesTheDatasetUnchanged) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::file);
  ShardedDataset mine = auto_shard(global, 1, 0);
  EXPECT_EQ(mine.policy, AutoShardPolicy::data);
  EXPECT_EQ(mine.dataset.node(), global.node());
}

TEST_F(AutoShardTest, AutoPicksFileWhenThereAreEnoughFiles) {
  Dataset global = TextLineDataset(files_).batch(4);  // default options: AUTO
  ShardedDataset mine = auto_shard(global, 2, 1);
  EXPECT_EQ(mine.policy, AutoShardPolicy::file);
  EXPECT_EQ(mine.fallback_reason, "");
  EXPECT_EQ(lines_of(mine.dataset), lines_of_files({1, 3}));
}

TEST_F(AutoShardTest, AutoFallsBackToDataWithTooFewFiles) {
  Dataset global = TextLineDataset({files_[0]}).batch(4);
  ShardedDataset mine = auto_shard(global, 2, 0);
  EXPECT_EQ(mine.policy, AutoShardPolicy::data);
  EXPECT_EQ(mine.dataset.node(), global.node());
  EXPECT_TRUE(testing::contains(mine.fallback_reason, "only has 1 file(s) for 2 workers")) << mine.fallback_reason;
}

TEST_F(AutoShardTest, AutoFallsBackToDataForAnUnshardableSource) {
  Dataset global = Dataset::from_tensor_slices({{"x", Tensor::zeros({8, 2})}}).batch(4);
  ShardedDataset mine = auto_shard(global, 2, 0);
  EXPECT_EQ(mine.policy, AutoShardPolicy::data);
  EXPECT_EQ(mine.dataset.node(), global.node());
  EXPECT_TRUE(testing::contains(mine.fallback_reason, "unshardable source dataset: from_tensor_slices"))
      << mine.fallback_reason;
}

TEST_F(AutoShardTest, AutoFallsBackToDataWithoutADividingBatch) {
  ShardedDataset unbatched = auto_shard(TextLineDataset(files_), 2, 0);
  EXPECT_EQ(unbatched.policy, AutoShardPolicy::data);
  EXPECT_TRUE(testing::contains(unbatched.fallback_reason, "no batch transform")) << unbatched.fallback_reason;

  ShardedDataset odd = auto_shard(TextLineDataset(files_).batch(5), 2, 0);
  EXPECT_EQ(odd.policy, AutoShardPolicy::data);
  EXPECT_TRUE(testing::contains(odd.fallback_reason, "batch size 5")) << odd.fallback_reason;
  EXPECT_EQ(batch_rows(odd.dataset, "text"), (std::vector<std::int64_t>{5, 5, 2}));
}

TEST_F(AutoShardTest, FileWithoutAFileSourceSaysTheFix) {
  Dataset global = with_policy(Dataset::range(8).batch(4), AutoShardPolicy::file);
  const std::string m = testing::error_message<ValueError>([&] { auto_shard(global, 2, 0); });
  EXPECT_TRUE(testing::contains(m, "FILE sharding needs a file-based source")) << m;
  EXPECT_TRUE(testing::contains(m, "(range -> batch -> with_options) starts at range")) << m;
  EXPECT_TRUE(testing::contains(m, "set the auto_shard_policy to DATA or OFF")) << m;
}

TEST_F(AutoShardTest, FileWithTooFewFilesSaysTheFix) {
  Dataset global = with_policy(TextLineDataset({files_[0]}).batch(4), AutoShardPolicy::file);
  const std::string m = testing::error_message<ValueError>([&] { auto_shard(global, 2, 1); });
  EXPECT_TRUE(testing::contains(m, "only has 1 file(s), not enough for 2 workers")) << m;
  EXPECT_TRUE(testing::contains(m, "DATA or OFF")) << m;
  EXPECT_TRUE(testing::contains(m, "split the input into at least 2 files")) << m;
}

TEST_F(AutoShardTest, FileAndOffWithoutABatchSayTheFix) {
  for (AutoShardPolicy policy : {AutoShardPolicy::file, AutoShardPolicy::off}) {
    Dataset global = with_policy(TextLineDataset(files_).map([](Element e) { return e; }), policy);
    const std::string m = testing::error_message<ValueError>([&] { auto_shard(global, 2, 0); });
    EXPECT_TRUE(testing::contains(m, to_string(policy) + " sharding divides the global batch among the 2 workers"))
        << m;
    EXPECT_TRUE(testing::contains(m, "(TextLineDataset -> map -> with_options) has no batch transform")) << m;
  }
}

TEST_F(AutoShardTest, ABatchSizeThatDoesNotDivideSaysTheFix) {
  Dataset global = with_policy(TextLineDataset(files_).batch(5), AutoShardPolicy::off);
  const std::string m = testing::error_message<ValueError>([&] { auto_shard(global, 2, 0); });
  EXPECT_TRUE(testing::contains(m, "OFF sharding of the pipeline (TextLineDataset -> batch -> with_options)")) << m;
  EXPECT_TRUE(testing::contains(m, "batch: the global batch size 5 does not divide among 2 workers")) << m;
  EXPECT_TRUE(testing::contains(m, "a multiple of the number of workers, e.g. 4 or 6")) << m;
}

TEST_F(AutoShardTest, WorkerIndexMustBeInRange) {
  Dataset global = TextLineDataset(files_).batch(4);
  for (const std::pair<int, int>& bad : {std::pair{2, 2}, std::pair{2, -1}, std::pair{0, 0}}) {
    const std::string m = testing::error_message<ValueError>([&] { auto_shard(global, bad.first, bad.second); });
    EXPECT_TRUE(testing::contains(m, "0 <= worker_index < num_workers")) << m;
  }
}

TEST(AutoShardBatching, PaddedBatchSizeIsDivided) {
  Dataset global =
      with_policy(ragged({1, 2, 3, 4, 5, 6, 7, 8}).padded_batch(4, {.drop_remainder = true}), AutoShardPolicy::off);
  Dataset mine = auto_shard(global, 2, 0).dataset;
  EXPECT_EQ(batch_rows(mine, "ids"), (std::vector<std::int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(to_string(mine.element_spec()), "{ids: int64[2,-1], label: int64[2]}");
  EXPECT_EQ(mine.cardinality(), 4);
}

TEST(AutoShardBatching, CollateSizeIsDivided) {
  auto count_rows = [](const std::vector<Element>& group) {
    return Element{{"rows", Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(group.size())}, {1})}};
  };
  Dataset global = with_policy(ragged({1, 2, 3, 4, 5, 6}).collate(6, count_rows), AutoShardPolicy::off);
  Dataset mine = auto_shard(global, 3, 2).dataset;
  EXPECT_EQ(testing_util::firsts(mine, "rows"), (std::vector<std::int64_t>{2, 2, 2}));
}

TEST(AutoShardBatching, EveryBucketBatchSizeIsDivided) {
  auto length = [](const Element& e) { return e.tensor("ids").shape()[0]; };
  Dataset global = with_policy(ragged({1, 1, 1, 1, 5, 5, 5, 5}).bucket_by_sequence_length(length, {3}, {4, 2}),
                               AutoShardPolicy::off);
  Dataset mine = auto_shard(global, 2, 0).dataset;
  // Short ones in batches of 2, long ones in batches of 1.
  EXPECT_EQ(batch_rows(mine, "ids"), (std::vector<std::int64_t>{2, 2, 1, 1, 1, 1}));

  Dataset odd = with_policy(ragged({1, 5}).bucket_by_sequence_length(length, {3}, {4, 3}), AutoShardPolicy::off);
  const std::string m = testing::error_message<ValueError>([&] { auto_shard(odd, 2, 0); });
  EXPECT_TRUE(testing::contains(m, "bucket_by_sequence_length: the bucket batch sizes [4, 3]")) << m;
  EXPECT_TRUE(testing::contains(m, "multiples of the number of workers")) << m;
}

TEST(AutoShardBatching, TheOutermostBatchIsDivided) {
  // batch(2) then batch(4): the outer one makes the global batch.
  Dataset global = with_policy(Dataset::range(16).batch(2).batch(4), AutoShardPolicy::off);
  std::vector<Element> batches = auto_shard(global, 2, 0).dataset.to_vector();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].tensor("value").shape().to_vector(), (std::vector<std::int64_t>{2, 2}));
}

TEST_F(AutoShardTest, RebuiltTransformsBehaveAsTheOriginal) {
  auto make = [&] {
    return TextLineDataset(files_)
        .map([](Element e) {
          return Element{{"text", Strings(e.strings("text").scalar() + "!")}};
        })
        .filter([](const Element& e) { return e.strings("text").scalar().find("line 1") == std::string::npos; })
        .shuffle(16, /*seed=*/7)
        .take(6)
        .batch(2);
  };
  Dataset original = with_policy(make(), AutoShardPolicy::off);
  const std::vector<std::string> first_pass = lines_of(original);
  ASSERT_EQ(first_pass.size(), 6u);
  EXPECT_NE(lines_of(original), first_pass);  // the original's second pass is reshuffled
  for (const std::string& line : first_pass) {
    EXPECT_EQ(line.back(), '!');
    EXPECT_EQ(line.find("line 1"), std::string::npos);
  }

  // The rebuilt copy starts at the first pass again, as a fresh copy of the original does.
  Dataset rebuilt = auto_shard(original, 2, 0).dataset;
  EXPECT_EQ(lines_of(rebuilt), lines_of(make()));
  EXPECT_EQ(lines_of(make()), first_pass);
  EXPECT_EQ(batch_rows(rebuilt, "text"), (std::vector<std::int64_t>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(rebuilt.describe(), "TextLineDataset -> map -> filter -> shuffle -> take -> batch -> with_options");
}

TEST_F(AutoShardTest, RebuiltTransformsStartWithFreshCounts) {
  const std::string missing = (dir_ / "missing.txt").string();
  Dataset original = with_policy(TextLineDataset({missing, files_[0]}).ignore_errors().batch(2), AutoShardPolicy::off);
  EXPECT_EQ(lines_of(original).size(), 3u);
  EXPECT_EQ(original.ignored_errors(), 1);

  Dataset rebuilt = auto_shard(original, 2, 0).dataset;
  EXPECT_EQ(rebuilt.ignored_errors(), 0);
  EXPECT_EQ(lines_of(rebuilt).size(), 3u);
  EXPECT_EQ(rebuilt.ignored_errors(), 1);

  Dataset padded = with_policy(ragged({1, 2, 3, 4}).padded_batch(4), AutoShardPolicy::off);
  padded.to_vector();
  EXPECT_EQ(padded.padding_stats().batches, 1);
  Dataset padded_rebuilt = auto_shard(padded, 2, 0).dataset;
  EXPECT_EQ(padded_rebuilt.padding_stats().batches, 0);
  padded_rebuilt.to_vector();
  EXPECT_EQ(padded_rebuilt.padding_stats().batches, 2);
  EXPECT_EQ(padded.padding_stats().batches, 1);
}

TEST(Options, TheOutermostWithOptionsWins) {
  EXPECT_EQ(Dataset::range(3).options().experimental_distribute.auto_shard_policy, AutoShardPolicy::auto_);
  Dataset ds = with_policy(with_policy(Dataset::range(3), AutoShardPolicy::file).map([](Element e) { return e; }),
                           AutoShardPolicy::off);
  EXPECT_EQ(ds.options().experimental_distribute.auto_shard_policy, AutoShardPolicy::off);
  EXPECT_EQ(ds.describe(), "range -> with_options -> map -> with_options");
}

TEST(Options, WithOptionsPassesEverythingThrough) {
  Dataset plain = ragged({1, 3, 2}).padded_batch(2);
  Dataset ds = with_policy(plain, AutoShardPolicy::data);
  EXPECT_EQ(ds.cardinality(), 2);
  EXPECT_EQ(ds.element_spec(), plain.element_spec());
  std::vector<Element> batches = ds.to_vector();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].tensor("ids").shape().to_vector(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(ds.padding_stats().batches, 2);
  EXPECT_EQ(ds.padding_stats().real_values, 6);
}

TEST_F(AutoShardTest, OptionsSurviveTheRewrite) {
  Dataset global = with_policy(TextLineDataset(files_).batch(4), AutoShardPolicy::file);
  for (int i = 0; i < 2; ++i) {
    Dataset mine = auto_shard(global, 2, i).dataset;
    EXPECT_EQ(mine.options().experimental_distribute.auto_shard_policy, AutoShardPolicy::file);
    EXPECT_NE(mine.node(), global.node());
  }
}

TEST(AutoShardPolicyNames, AreTfDatas) {
  EXPECT_EQ(to_string(AutoShardPolicy::auto_), "AUTO");
  EXPECT_EQ(to_string(AutoShardPolicy::file), "FILE");
  EXPECT_EQ(to_string(AutoShardPolicy::data), "DATA");
  EXPECT_EQ(to_string(AutoShardPolicy::off), "OFF");
}

TEST(FromFiles, ReadsTheFilesAtEveryPassAndSplitsByFile) {
  std::vector<std::vector<std::string>> reads;
  auto read = [&reads](const std::vector<std::string>& files) -> Generator {
    reads.push_back(files);
    return [files, i = std::size_t{0}]() mutable -> std::optional<Element> {
      if (i == files.size()) return std::nullopt;
      return Element{{"name", Strings(files[i++])}};
    };
  };
  const ElementSpec spec{{"name", ValueSpec{{}, DType::float32, true}}};
  Dataset ds = Dataset::from_files({"a", "b", "c"}, read, spec, "names");
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_EQ(ds.element_spec(), spec);
  EXPECT_EQ(ds.describe(), "names");
  EXPECT_EQ(ds.node()->files(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ds.to_vector().size(), 3u);
  EXPECT_EQ(ds.to_vector().size(), 3u);
  EXPECT_EQ(reads.size(), 2u);  // element_spec() did not read: the spec was given

  Dataset subset(ds.node()->with_files({"c"}));
  ASSERT_EQ(subset.to_vector().size(), 1u);
  EXPECT_EQ(subset.to_vector()[0].strings("name").scalar(), "c");
  EXPECT_EQ(subset.describe(), "names");
}

TEST(FromFiles, NoFilesIsAValueErrorNamingTheSource) {
  const std::string m = testing::error_message<ValueError>([] {
    Dataset::from_files(
        {}, [](const std::vector<std::string>&) -> Generator { return [] { return std::optional<Element>(); }; }, {},
        "my_corpus");
  });
  EXPECT_TRUE(testing::contains(m, "my_corpus: no files given")) << m;
}

}  // namespace
}  // namespace kestrel::data
