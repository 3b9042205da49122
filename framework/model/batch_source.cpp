#include "framework/model/batch_source.h"

#include <algorithm>
#include <array>

#include "framework/core/error.h"
#include "framework/data/auto_shard.h"
#include "framework/logging/logging.h"
#include "framework/model/worker_batches.h"

namespace kestrel::detail {
namespace {

class ArraySource final : public BatchSource {
 public:
  ArraySource(ArrayBatches batches, std::optional<random::Key> shuffle_key, std::int64_t max_steps)
      : batches_(std::move(batches)),
        shuffle_key_(shuffle_key),
        steps_(max_steps > 0 ? std::min(max_steps, batches_.num_batches()) : batches_.num_batches()) {}
  std::int64_t steps() const override { return steps_; }
  void start_epoch(int epoch) override {
    next_ = 0;
    if (shuffle_key_) batches_.shuffle(shuffle_key_->fold_in(static_cast<std::uint64_t>(epoch)));
  }
  std::optional<Batch> next() override {
    if (next_ >= steps_) return std::nullopt;
    return batches_.batch(next_++);
  }

 private:
  ArrayBatches batches_;
  std::optional<random::Key> shuffle_key_;
  std::int64_t steps_;
  std::int64_t next_ = 0;
};

class DatasetSource final : public BatchSource {
 public:
  /// `per_worker`: its batches are this worker's parts of the global batches (BatchSource::per_worker).
  DatasetSource(data::Dataset dataset, std::int64_t steps, const char* method, const char* steps_option,
                std::vector<std::string> output_names, bool per_worker = false)
      : dataset_(std::move(dataset)), output_names_(std::move(output_names)), per_worker_(per_worker) {
    const std::int64_t n = dataset_.cardinality();
    if (n == data::kInfiniteCardinality && steps <= 0) {
      throw ValueError(std::string(method) + ": the dataset (" + dataset_.describe() + ") repeats forever; pass " +
                       steps_option + " so a pass ends");
    }
    if (n == 0) throw ValueError(std::string(method) + ": the dataset (" + dataset_.describe() + ") is empty");
    steps_ = steps > 0 ? (n >= 0 ? std::min(steps, n) : steps) : (n >= 0 ? n : -1);
    // As Keras: when an epoch is not exactly one pass (infinite data, or a step count other than
    // the dataset's length), one iterator reads on across epochs instead of restarting.
    read_on_ = n == data::kInfiniteCardinality || (steps > 0 && steps != n);
  }
  std::int64_t steps() const override { return steps_; }
  void start_epoch(int) override {
    taken_ = 0;
    if (read_on_ && iterator_) return;
    // The previous pass ends before the next begins, so two prefetch threads never run the
    // pipeline at once.
    iterator_.reset();
    iterator_ = dataset_.make_iterator();
  }
  std::optional<Batch> next() override {
    if (steps_ >= 0 && taken_ >= steps_) return std::nullopt;
    std::optional<data::Element> element = iterator_->next();
    if (!element) {
      exhausted_ = read_on_;
      return std::nullopt;
    }
    ++taken_;
    return batch_from_element(*element, output_names_);
  }
  bool ran_out() const override { return exhausted_; }
  bool per_worker() const override { return per_worker_; }
  void end_epoch(const char* method) override {
    const data::PaddingReport padding = dataset_.padding_stats();
    if (padding.batches == 0) return;
    logging::get("kestrel.data")->info("{}: padding so far: {}", method, padding.to_string());
  }

 private:
  data::Dataset dataset_;
  std::vector<std::string> output_names_;
  bool per_worker_;
  bool read_on_ = false;
  bool exhausted_ = false;
  std::int64_t steps_ = -1;
  std::int64_t taken_ = 0;
  std::unique_ptr<data::Iterator> iterator_;
};

const Tensor& tensor_for_model(const data::Element& element, const std::string& key) {
  if (std::holds_alternative<data::Strings>(element.at(key))) {
    throw TypeError("the batch holds strings under '" + key +
                    "'; a model takes tensors: tokenize the text in a map() before batching, or drop the key");
  }
  return element.tensor(key);
}

}  // namespace

std::unique_ptr<BatchSource> array_source(ArrayBatches batches, std::optional<random::Key> shuffle_key,
                                          std::int64_t max_steps) {
  return std::make_unique<ArraySource>(std::move(batches), shuffle_key, max_steps);
}

std::unique_ptr<BatchSource> dataset_source(const data::Dataset& dataset, std::int64_t steps, const char* method,
                                            const char* steps_option, const distribute::Distribution* distribution,
                                            const std::vector<std::string>& output_names) {
  if (distribution == nullptr || distribution->num_workers() == 1) {
    return std::make_unique<DatasetSource>(dataset, steps, method, steps_option, output_names);
  }
  const data::ShardedDataset sharded =
      data::auto_shard(dataset, distribution->num_workers(), distribution->worker_index());
  auto own = std::make_unique<DatasetSource>(sharded.dataset, steps, method, steps_option, output_names);
  if (!sharded.per_worker()) return own;
  return worker_batches(std::move(own), *distribution, method);
}

std::unique_ptr<BatchSource> distributed_source(const distribute::DistributedDataset& dataset, std::int64_t steps,
                                                const char* method, const char* steps_option,
                                                const distribute::Distribution& distribution,
                                                const std::vector<std::string>& output_names) {
  if (dataset.num_replicas() != distribution.num_local_replicas()) {
    throw ValueError(std::string(method) + ": the distributed dataset feeds " + std::to_string(dataset.num_replicas()) +
                     " replicas, but the model's strategy (" + distribution.name() + ") runs " +
                     std::to_string(distribution.num_local_replicas()) +
                     " here; distribute the dataset with the strategy whose scope built the model");
  }
  // Over several workers each step is this worker's part. The distributed dataset's own iterator
  // already ends every worker's pass at the same step (a worker whose data has ended brings
  // empty parts, padded and masked here), so no second agreement is needed.
  return std::make_unique<DatasetSource>(dataset.worker_batches(), steps, method, steps_option, output_names,
                                         /*per_worker=*/distribution.num_workers() > 1);
}

Batch batch_from_element(const data::Element& element, const std::vector<std::string>& output_names) {
  Batch batch;
  std::map<std::string, Tensor> inputs, targets;
  static constexpr std::array<const char*, 3> kLabelKeys = {"labels", "label", "y"};
  for (const auto& [key, value] : element.values()) {
    const bool is_label = std::find(kLabelKeys.begin(), kLabelKeys.end(), key) != kLabelKeys.end();
    if (std::find(output_names.begin(), output_names.end(), key) != output_names.end()) {
      targets[key] = tensor_for_model(element, key);
    } else if (is_label) {
      if (batch.y.defined()) {
        throw ValueError("the batch has more than one label key (" + element.keys_string() +
                         "); keep one of labels, label, y");
      }
      batch.y = tensor_for_model(element, key);
    } else if (key == "sample_weight") {
      batch.sample_weight = tensor_for_model(element, key);
    } else {
      inputs[key] = tensor_for_model(element, key);
    }
  }
  if (inputs.empty()) {
    throw ValueError("the batch " + element.keys_string() + " has no inputs besides labels and sample weights");
  }
  if (!targets.empty()) {
    if (batch.y.defined()) {
      throw ValueError("the batch " + element.keys_string() +
                       " has both a label key and keys named after the model's outputs; a model of several outputs "
                       "takes its targets under its output names only");
    }
    batch.y = Outputs(std::move(targets));
  }
  if (inputs.size() == 1 && inputs.count("x") != 0) {
    batch.x = Inputs(inputs.at("x"));
  } else {
    batch.x = Inputs(std::move(inputs));
  }
  return batch;
}

}  // namespace kestrel::detail
