// Auto-sharding over the workers (tf.data's AutoShardPolicy): FILE gives each worker its own
// files, DATA every worker the global batches, OFF every worker everything. Each sample is seen
// once an epoch over the workers under FILE and DATA (W times under OFF), in custom loops and in
// fit / evaluate / predict, including when one worker's files run out before the others'. A
// FILE-sharded fit trains exactly as one process given the same global batches. fit, evaluate and
// predict also take the pipelines distribute_datasets_from_function makes, one per worker.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/auto_shard.h"
#include "framework/data/dataset.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/shape_ops.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"
#include "tests/strategies/multi_worker/gathered_from_every_worker.h"
#include "tests/strategies/multi_worker/same_on_every_worker.h"
#include "tests/strategies/multi_worker/this_job.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;
using testing::same_on_every_worker;
using testing::workers;

// Every worker's values, sorted.
std::vector<std::int64_t> gather_all(const std::vector<std::int64_t>& mine) {
  std::vector<std::int64_t> all = testing::gathered_from_every_worker(mine);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::int64_t> each_once(std::int64_t samples, int times = 1) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < samples; ++i) out.insert(out.end(), static_cast<std::size_t>(times), i);
  return out;
}

// Text files of the numbers 0, 1, ... one per line, file k holding lengths[k] of them. Each
// worker writes its own copy (the workers may not share a disk).
class NumberFiles {
 public:
  explicit NumberFiles(const std::vector<std::int64_t>& lengths)
      : dir_(std::filesystem::temp_directory_path() /
             ("kestrel_auto_shard_" + std::to_string(getpid()) + "_" + std::to_string(workers().index()) + "_" +
              std::to_string(sets_made++))) {
    std::filesystem::create_directories(dir_);
    std::int64_t next = 0;
    for (std::size_t k = 0; k < lengths.size(); ++k) {
      paths_.push_back((dir_ / ("part-" + std::to_string(k) + ".txt")).string());
      std::ofstream out(paths_.back());
      for (std::int64_t i = 0; i < lengths[k]; ++i) out << next++ << "\n";
    }
    samples_ = next;
  }
  ~NumberFiles() { std::filesystem::remove_all(dir_); }
  NumberFiles(const NumberFiles&) = delete;
  NumberFiles& operator=(const NumberFiles&) = delete;

  const std::vector<std::string>& paths() const { return paths_; }
  std::int64_t samples() const { return samples_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::string> paths_;
  std::int64_t samples_ = 0;
  static inline int sets_made = 0;  // so that two sets of files live side by side
};

// {"value": int64} per line.
data::Dataset numbers(const std::vector<std::string>& files) {
  return data::TextLineDataset(files).map([](data::Element e) {
    return data::Element{
        {"value", Tensor::from_vector<std::int64_t>({std::stoll(e.strings("text").scalar())}, Shape())}};
  });
}

data::Dataset with_policy(const data::Dataset& dataset, data::AutoShardPolicy policy) {
  data::Options options;
  options.experimental_distribute.auto_shard_policy = policy;
  return dataset.with_options(options);
}

// The values every replica of this worker got over one pass, and the pass's steps.
struct Pass {
  std::vector<std::int64_t> values;
  int steps = 0;
};
Pass read_pass(const MultiWorkerMirroredStrategy& strategy, const data::Dataset& dataset) {
  Pass pass;
  auto it = strategy.experimental_distribute_dataset(dataset).make_iterator();
  while (std::optional<PerReplica<data::Element>> step = it->next()) {
    EXPECT_EQ(step->size(), strategy.num_local_replicas());
    for (int r = 0; r < step->size(); ++r) {
      const std::vector<std::int64_t> rows = (*step)[r].tensor("value").to_vector<std::int64_t>();
      pass.values.insert(pass.values.end(), rows.begin(), rows.end());
    }
    ++pass.steps;
  }
  return pass;
}

TEST(AutoShard, FileGivesEachWorkerItsOwnFilesAndEachSampleOnce) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  const int w = workers().count();
  // Two files per worker, of unequal lengths: the last worker's run out first.
  std::vector<std::int64_t> lengths;
  for (int k = 0; k < 2 * w; ++k) lengths.push_back(k % w == w - 1 ? 3 : 9 + k);
  const NumberFiles files(lengths);
  const std::int64_t global = 4 * strategy.num_replicas_in_sync();
  const Pass pass = read_pass(strategy, with_policy(numbers(files.paths()).batch(global), data::AutoShardPolicy::file));
  // This worker read its files only: files index, index + W.
  std::vector<std::int64_t> own;
  for (int k = workers().index(); k < 2 * w; k += w) {
    const std::int64_t first = std::accumulate(lengths.begin(), lengths.begin() + k, std::int64_t{0});
    for (std::int64_t i = 0; i < lengths[static_cast<std::size_t>(k)]; ++i) own.push_back(first + i);
  }
  std::vector<std::int64_t> mine = pass.values;
  std::sort(mine.begin(), mine.end());
  EXPECT_EQ(mine, own);
  EXPECT_EQ(gather_all(pass.values), each_once(files.samples()));
  // Every worker ran the longest pipeline's steps: a worker whose data ended went on with empty shards.
  EXPECT_EQ(workers().max(pass.steps), pass.steps);
  EXPECT_EQ(-workers().max(-pass.steps), pass.steps);
}

TEST(AutoShard, DataAndOffReadEverythingOnEveryWorker) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 2});
  const NumberFiles files({40, 24, 8});
  const std::int64_t global = 2 * strategy.num_replicas_in_sync();
  const data::Dataset batched = numbers(files.paths()).batch(global);
  EXPECT_EQ(gather_all(read_pass(strategy, with_policy(batched, data::AutoShardPolicy::data)).values),
            each_once(files.samples()));
  EXPECT_EQ(gather_all(read_pass(strategy, with_policy(batched, data::AutoShardPolicy::off)).values),
            each_once(files.samples(), workers().count()));
}

TEST(AutoShard, AutoPicksFileWithEnoughFilesElseData) {
  const int w = workers().count();
  const NumberFiles many(std::vector<std::int64_t>(static_cast<std::size_t>(2 * w), 6));
  const NumberFiles one({24});
  const data::ShardedDataset enough = data::auto_shard(numbers(many.paths()).batch(2 * w), w, workers().index());
  EXPECT_EQ(enough.policy, data::AutoShardPolicy::file);
  const data::ShardedDataset few = data::auto_shard(numbers(one.paths()).batch(2 * w), w, workers().index());
  EXPECT_EQ(few.policy, data::AutoShardPolicy::data);
  EXPECT_FALSE(few.fallback_reason.empty());
  // Whichever it picks, each sample is seen once.
  const MultiWorkerMirroredStrategy strategy;
  EXPECT_EQ(gather_all(read_pass(strategy, numbers(many.paths()).batch(2 * w)).values), each_once(many.samples()));
  EXPECT_EQ(gather_all(read_pass(strategy, numbers(one.paths()).batch(2 * w)).values), each_once(one.samples()));
}

TEST(AutoShard, FileWithFewerFilesThanWorkersNamesTheFix) {
  const MultiWorkerMirroredStrategy strategy;
  const NumberFiles one({8});
  const std::string message = error_message<ValueError>([&] {
    strategy.experimental_distribute_dataset(with_policy(numbers(one.paths()).batch(8), data::AutoShardPolicy::file));
  });
  EXPECT_TRUE(contains(message, "DATA")) << message;
}

// ---- fit, evaluate and predict over each worker's own files

// Sample i: x = [sin i, cos i, (i mod 5) / 5], label i mod 3.
data::Element sample(std::int64_t index) {
  const auto i = static_cast<double>(index);
  return data::Element{
      {"x", Tensor::from_vector<float>({static_cast<float>(std::sin(i)), static_cast<float>(std::cos(i)),
                                        static_cast<float>(std::fmod(i, 5.0) / 5.0)},
                                       {3})},
      {"labels", Tensor::from_vector<std::int64_t>({index % 3}, Shape())}};
}

// The samples of the numbers in the files' lines.
data::Dataset features(const std::vector<std::string>& files) {
  return data::TextLineDataset(files).map(
      [](data::Element e) { return sample(std::stoll(e.strings("text").scalar())); });
}

std::unique_ptr<Sequential> classifier(bool jit) {
  random::set_global_seed(11);
  auto model = std::make_unique<Sequential>(std::initializer_list<LayerArg>{layers::Dense(8, {.activation = "relu"}),
                                                                            layers::Dropout(0.2), layers::Dense(3)});
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"},
                  .jit_compile = jit});
  model->build(Shape({1, 3}));
  return model;
}

// A fresh classifier's weights, and its loss, accuracy and outputs on every sample in one process
// without a strategy: what the workers must reproduce between them.
struct Reference {
  std::vector<Tensor> weights;
  Logs evaluated;
  Tensor predicted;
};
Reference reference_on(const data::Dataset& everything) {
  clear_session();
  auto model = classifier(false);
  return {model->get_weights(), model->evaluate(everything, {.verbose = 0}),
          model->predict(everything, {.verbose = 0})};
}

// The workers' evaluate and predict over `data` (a dataset or a distributed one) count each sample
// once: the reference's loss and accuracy, and its outputs (in another order).
template <class Data>
void expect_as_reference(Sequential& model, const Data& data, const Reference& reference) {
  const Logs logs = model.evaluate(data, {.verbose = 0});
  EXPECT_NEAR(logs.at("loss"), reference.evaluated.at("loss"), 1e-5);
  EXPECT_NEAR(logs.at("accuracy"), reference.evaluated.at("accuracy"), 1e-6);
  const Tensor predicted = model.predict(data, {.verbose = 0});
  ASSERT_EQ(predicted.shape(), reference.predicted.shape());
  std::vector<float> got = predicted.to_vector<float>(), want = reference.predicted.to_vector<float>();
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5);
}

TEST(AutoShard, EvaluateAndPredictCountEachSampleOnceWhenAWorkersFilesRunOutFirst) {
  const int w = workers().count();
  std::vector<std::int64_t> lengths;
  for (int k = 0; k < 2 * w; ++k) lengths.push_back(k % w == 0 ? 5 : 13 + 2 * k);
  const NumberFiles files(lengths);
  const std::int64_t global = 16;
  const Reference reference = reference_on(features(files.paths()).batch(global));
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    clear_session();
    const MultiWorkerMirroredStrategy strategy({.local_replicas = 8 / w});
    auto scope = strategy.scope();
    auto model = classifier(jit);
    model->set_weights(reference.weights);
    expect_as_reference(*model, with_policy(features(files.paths()).batch(global), data::AutoShardPolicy::file),
                        reference);
  }
}

// The global batches FILE sharding makes, built in one process: batch k is every worker's batch
// k of its own pipeline, in worker order.
data::Dataset global_batches_of(const data::Dataset& dataset, int num_workers) {
  std::vector<std::vector<data::Element>> parts;
  for (int w = 0; w < num_workers; ++w) parts.push_back(data::auto_shard(dataset, num_workers, w).dataset.to_vector());
  std::vector<Tensor> xs, ys;
  for (std::size_t k = 0; k < parts[0].size(); ++k) {
    std::vector<Tensor> x, y;
    for (const auto& part : parts) {
      x.push_back(part.at(k).tensor("x"));
      y.push_back(part.at(k).tensor("labels"));
    }
    xs.push_back(ops::concat(x, 0));
    ys.push_back(ops::concat(y, 0));
  }
  const std::int64_t rows = xs[0].shape()[0];
  return data::Dataset::from_tensor_slices({{"x", ops::concat(xs, 0)}, {"labels", ops::concat(ys, 0)}}).batch(rows);
}

TEST(AutoShard, FileShardedFitTrainsAsOneProcessOnTheSameGlobalBatches) {
  const int w = workers().count();
  // Equal files, so every worker has as many full batches.
  const NumberFiles files(std::vector<std::int64_t>(static_cast<std::size_t>(2 * w), 32));
  const data::Dataset dataset = with_policy(features(files.paths()).batch(16), data::AutoShardPolicy::file);
  for (const bool jit : {false, true}) {
    std::vector<Tensor> expected;
    {
      clear_session();
      const MirroredStrategy one_process({.num_replicas = 8});
      auto scope = one_process.scope();
      auto model = classifier(jit);
      model->fit(global_batches_of(dataset, w), {.epochs = 2, .verbose = 0});
      expected = model->get_weights();
    }
    clear_session();
    const MultiWorkerMirroredStrategy strategy({.local_replicas = 8 / w});
    auto scope = strategy.scope();
    auto model = classifier(jit);
    const History history = model->fit(dataset, {.epochs = 2, .verbose = 0});
    EXPECT_EQ(history.epoch.size(), 2u);
    const std::vector<Tensor> got = model->get_weights();
    EXPECT_TRUE(same_on_every_worker(got)) << "jit " << jit;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::vector<float> a = got[i].to_vector<float>(), b = expected[i].to_vector<float>();
      for (std::size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], 1e-5) << "jit " << jit << " weight " << i;
    }
  }
}

TEST(AutoShard, WorkersWhoseBatchesDifferInShapeFailTogetherNamingTheFix) {
  const int w = workers().count();
  const NumberFiles files(std::vector<std::int64_t>(static_cast<std::size_t>(w), 8));
  clear_session();
  const MultiWorkerMirroredStrategy strategy;
  auto scope = strategy.scope();
  auto model = classifier(false);
  // Each worker's features as wide as its index + 3: no two workers' batches share a shape.
  const int width = 3 + workers().index();
  const data::Dataset wide =
      with_policy(data::TextLineDataset(files.paths())
                      .map([width](data::Element) {
                        return data::Element{{"x", Tensor::zeros({width})},
                                             {"labels", Tensor::from_vector<std::int64_t>({0}, Shape())}};
                      })
                      .batch(4),
                  data::AutoShardPolicy::file);
  const std::string message = error_message<ValueError>([&] { model->evaluate(wide, {.verbose = 0}); });
  EXPECT_TRUE(contains(message, "fixed shape")) << message;
}

TEST(AutoShard, FitEvaluateAndPredictReadEachWorkersPipelineFromFunction) {
  const int w = workers().count(), local = 8 / w;
  // Worker i's pipeline: its own samples, in per-replica batches of 2, and i + 1 steps of them.
  const auto pipeline_of = [local](int worker) {
    std::int64_t first = 0;
    for (int before = 0; before < worker; ++before) first += 2 * local * (before + 1);
    return data::Dataset::range(first, first + 2 * local * (worker + 1))
        .map([](data::Element e) { return sample(e.tensor("value").to_vector<std::int64_t>()[0]); })
        .batch(2);
  };
  std::int64_t total = 0;
  for (int worker = 0; worker < w; ++worker) total += 2 * local * (worker + 1);
  const data::Dataset everything = data::Dataset::range(total).map(
      [](data::Element e) { return sample(e.tensor("value").to_vector<std::int64_t>()[0]); });
  const Reference reference = reference_on(everything.batch(16));
  clear_session();
  const MultiWorkerMirroredStrategy strategy({.local_replicas = local});
  auto scope = strategy.scope();
  auto model = classifier(true);
  model->set_weights(reference.weights);
  const auto distributed = [&] {
    return strategy.distribute_datasets_from_function(
        [&](const InputContext& context) { return pipeline_of(context.input_pipeline_id); });
  };
  expect_as_reference(*model, distributed(), reference);
  // Training reads them as well: as many steps as the longest pipeline, the same weights everywhere.
  const History history = model->fit(distributed(), {.epochs = 1, .verbose = 0});
  EXPECT_TRUE(std::isfinite(history.history.at("loss").back()));
  EXPECT_TRUE(same_on_every_worker(model->get_weights()));
}

}  // namespace
}  // namespace kestrel::distribute
