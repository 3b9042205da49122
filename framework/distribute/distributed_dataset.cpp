#include "framework/distribute/distributed_dataset.h"

#include <iterator>
#include <memory>
#include <string>
#include <variant>

#include "framework/core/error.h"
#include "framework/distribute/replica_shards.h"

namespace kestrel::distribute {
namespace {

std::int64_t rows_of(const data::Value& value) {
  if (const auto* t = std::get_if<Tensor>(&value)) return t->rank() == 0 ? -1 : t->shape()[0];
  const auto& s = std::get<data::Strings>(value);
  return s.shape().rank() == 0 ? -1 : s.shape()[0];
}

// The rows every value of a global batch shares; a scalar or a disagreement cannot be split.
std::int64_t batch_rows(const data::Element& element) {
  std::int64_t rows = -1;
  for (const auto& [key, value] : element.values()) {
    const std::int64_t r = rows_of(value);
    if (r < 0) {
      throw ValueError("experimental_distribute_dataset: '" + key +
                       "' is a scalar, so the batch cannot be split over the replicas; batch the dataset first");
    }
    if (rows >= 0 && r != rows) {
      throw ShapeError("experimental_distribute_dataset: the values of a batch have " + std::to_string(rows) + " and " +
                       std::to_string(r) + " rows ('" + key + "'); every value needs the same first dimension");
    }
    rows = r;
  }
  return rows;
}

class SplitIterator final : public DistributedDataset::Iterator {
 public:
  SplitIterator(std::unique_ptr<data::Iterator> source, int replicas, int first, int local)
      : source_(std::move(source)), replicas_(replicas), first_(first), local_(local) {}

  std::optional<PerReplica<data::Element>> next() override {
    std::optional<data::Element> batch = source_->next();
    if (!batch) return std::nullopt;
    const std::int64_t shard = rows_per_replica(
        batch_rows(*batch), replicas_, "experimental_distribute_dataset",
        "batch by a multiple of " + std::to_string(replicas_) +
            " and drop the remainder (batch(n, {.drop_remainder = true})), or let fit pad the last batch");
    PerReplica<data::Element> all = split_element(*batch, replicas_, shard);
    if (local_ == replicas_) return all;
    PerReplica<data::Element> mine;
    mine.values.assign(std::make_move_iterator(all.values.begin() + first_),
                       std::make_move_iterator(all.values.begin() + first_ + local_));
    return mine;
  }

 private:
  std::unique_ptr<data::Iterator> source_;
  int replicas_;  // in sync, over every worker
  int first_;     // this worker's replicas among them: [first_, first_ + local_)
  int local_;
};

class InterleaveIterator final : public DistributedDataset::Iterator {
 public:
  InterleaveIterator(std::unique_ptr<data::Iterator> source, int replicas)
      : source_(std::move(source)), replicas_(replicas) {}

  std::optional<PerReplica<data::Element>> next() override {
    PerReplica<data::Element> out;
    for (int r = 0; r < replicas_; ++r) {
      std::optional<data::Element> element = source_->next();
      if (!element) return std::nullopt;  // a partial step would leave replicas without data
      out.values.push_back(std::move(*element));
    }
    return out;
  }

 private:
  std::unique_ptr<data::Iterator> source_;
  int replicas_;
};

// Zero rows of each value: what a replica whose worker's data has ended gets.
data::Element empty_like(const data::Element& element) {
  data::Element out;
  for (const auto& [key, value] : element.values()) {
    if (const auto* t = std::get_if<Tensor>(&value)) {
      std::vector<std::int64_t> dims(t->shape().dims().begin(), t->shape().dims().end());
      if (!dims.empty()) dims[0] = 0;
      out.set(key, Tensor::empty(Shape(dims), t->dtype()));
      continue;
    }
    const Shape& shape = std::get<data::Strings>(value).shape();
    std::vector<std::int64_t> dims(shape.dims().begin(), shape.dims().end());
    if (!dims.empty()) dims[0] = 0;
    out.set(key, data::Strings(std::vector<std::string>{}, Shape(dims)));
  }
  return out;
}

// A worker's own pipeline read in step with the other workers' (see DistributedDataset).
class AgreedEndIterator final : public DistributedDataset::Iterator {
 public:
  AgreedEndIterator(std::unique_ptr<DistributedDataset::Iterator> own, const Distribution& workers)
      : own_(std::move(own)), workers_(workers) {}

  std::optional<PerReplica<data::Element>> next() override {
    // Once this worker's pass has ended it is not asked again (a pipeline need not answer twice).
    std::optional<PerReplica<data::Element>> mine = own_ended_ ? std::nullopt : own_->next();
    own_ended_ = !mine;
    if (mine) last_ = mine;
    const double note[] = {mine ? 1.0 : 0.0, last_ ? 1.0 : 0.0};
    const std::vector<double> all = workers_.gather_from_workers(note);
    bool any = false;
    std::string never;
    for (std::size_t w = 0; w < all.size(); w += 2) {
      any = any || all[w] != 0;
      if (all[w + 1] == 0) never += (never.empty() ? "" : ", ") + std::to_string(w / 2);
    }
    if (!any) return std::nullopt;
    if (!never.empty()) {
      throw ValueError("distributed dataset (" + workers_.name() + "): worker(s) " + never +
                       " had no batch at all while the others have data, so there is no shape to give their "
                       "replicas; give every worker data (more or smaller files), or set the dataset's "
                       "auto_shard_policy to DATA");
    }
    if (mine) return mine;
    PerReplica<data::Element> empty;
    for (const data::Element& element : last_->values) empty.values.push_back(empty_like(element));
    return empty;
  }

 private:
  std::unique_ptr<DistributedDataset::Iterator> own_;
  const Distribution& workers_;
  bool own_ended_ = false;
  std::optional<PerReplica<data::Element>> last_;
};

}  // namespace

PerReplica<data::Element> split_element(const data::Element& element, int replicas, std::int64_t shard) {
  PerReplica<data::Element> out;
  out.values.resize(static_cast<std::size_t>(replicas));
  std::vector<Tensor> shards;
  for (const auto& [key, value] : element.values()) {
    if (const auto* t = std::get_if<Tensor>(&value)) {
      shard_rows(*t, replicas, shards, "experimental_distribute_dataset");  // the splitter fit's steps use
      for (int r = 0; r < replicas; ++r) out.values[static_cast<std::size_t>(r)].set(key, std::move(shards[r]));
      continue;
    }
    const auto& s = std::get<data::Strings>(value);
    const std::int64_t per_row = s.shape()[0] == 0 ? 0 : s.size() / s.shape()[0];
    std::vector<std::int64_t> dims = {shard};
    for (int d = 1; d < s.shape().rank(); ++d) dims.push_back(s.shape()[d]);
    for (int r = 0; r < replicas; ++r) {
      const auto begin = s.values().begin() + r * shard * per_row;
      out.values[static_cast<std::size_t>(r)].set(
          key, data::Strings(std::vector<std::string>(begin, begin + shard * per_row), Shape(dims)));
    }
  }
  return out;
}

data::Element join_elements(const PerReplica<data::Element>& elements) {
  data::Element out;
  const data::Element& first = elements[0];
  for (const auto& [key, value] : first.values()) {
    if (std::holds_alternative<Tensor>(value)) {
      std::vector<Tensor> rows;
      for (const data::Element& element : elements.values) rows.push_back(element.tensor(key));
      out.set(key, join_rows(rows));
      continue;
    }
    std::vector<std::string> joined;
    std::int64_t total = 0;
    for (const data::Element& element : elements.values) {
      const data::Strings& s = element.strings(key);
      joined.insert(joined.end(), s.values().begin(), s.values().end());
      total += s.shape().rank() == 0 ? 1 : s.shape()[0];
    }
    std::vector<std::int64_t> dims(first.strings(key).shape().dims().begin(), first.strings(key).shape().dims().end());
    if (!dims.empty()) dims[0] = total;
    out.set(key, data::Strings(std::move(joined), Shape(dims)));
  }
  return out;
}

DistributedDataset::DistributedDataset(data::Dataset source, int replicas, Mode mode, WorkerShare share,
                                       const Distribution* workers)
    : source_(std::move(source)),
      replicas_(replicas),
      mode_(mode),
      share_(share),
      workers_(workers != nullptr && workers->num_workers() > 1 ? workers : nullptr) {
  if (replicas < 1) throw ValueError("DistributedDataset: replicas must be >= 1, got " + std::to_string(replicas));
  if (share_.replicas_in_sync == 0) share_ = {.first_replica = 0, .replicas_in_sync = replicas};
  if (share_.first_replica < 0 || share_.first_replica + replicas > share_.replicas_in_sync) {
    throw ValueError("DistributedDataset: replicas [" + std::to_string(share_.first_replica) + ", " +
                     std::to_string(share_.first_replica + replicas) + ") are not among the " +
                     std::to_string(share_.replicas_in_sync) + " in sync");
  }
}

DistributedDataset DistributedDataset::split_batches(data::Dataset global_batches, int replicas, WorkerShare share) {
  return DistributedDataset(std::move(global_batches), replicas, Mode::split, share, nullptr);
}

DistributedDataset DistributedDataset::split_worker_batches(data::Dataset worker_batches, int replicas,
                                                            const Distribution& workers) {
  return DistributedDataset(std::move(worker_batches), replicas, Mode::split_own, {}, &workers);
}

DistributedDataset DistributedDataset::interleave_replicas(data::Dataset replica_batches, int replicas,
                                                           const Distribution* workers) {
  return DistributedDataset(std::move(replica_batches), replicas, Mode::interleave, {}, workers);
}

std::unique_ptr<DistributedDataset::Iterator> DistributedDataset::make_iterator() const {
  std::unique_ptr<Iterator> own;
  if (mode_ == Mode::interleave) {
    own = std::make_unique<InterleaveIterator>(source_.make_iterator(), replicas_);
  } else {
    own = std::make_unique<SplitIterator>(source_.make_iterator(), share_.replicas_in_sync, share_.first_replica,
                                          replicas_);
  }
  if (workers_ == nullptr || mode_ == Mode::split) return own;  // every worker reads the same global batches
  return std::make_unique<AgreedEndIterator>(std::move(own), *workers_);
}

data::Dataset DistributedDataset::worker_batches() const {
  // As many steps as the source's batches make, unless the workers agree on them as they go.
  const std::int64_t n = source_.cardinality();
  std::int64_t steps = n;
  if (n >= 0) steps = workers_ != nullptr ? data::kUnknownCardinality : mode_ == Mode::interleave ? n / replicas_ : n;
  return data::Dataset::from_generator(
      [self = *this]() -> data::Generator {
        std::shared_ptr<Iterator> steps_of_pass = self.make_iterator();
        return [steps_of_pass]() -> std::optional<data::Element> {
          std::optional<PerReplica<data::Element>> step = steps_of_pass->next();
          if (!step) return std::nullopt;
          return join_elements(*step);
        };
      },
      source_.element_spec(), steps, "distributed dataset (" + source_.describe() + ")");
}

}  // namespace kestrel::distribute
