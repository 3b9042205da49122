// Transforms that group elements: batch, padded_batch, collate, bucket_by_sequence_length.
#include <algorithm>

#include "framework/core/error.h"
#include "framework/data/batching.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

std::int64_t batched_cardinality(std::int64_t n, std::int64_t batch_size, bool drop_remainder) {
  if (n < 0) return n;
  return drop_remainder ? n / batch_size : (n + batch_size - 1) / batch_size;
}

// Reads up to batch_size elements and turns them into one batch with `combine`.
class GroupingIterator final : public Iterator {
 public:
  using Combine = std::function<Element(const std::vector<Element>&)>;
  GroupingIterator(std::unique_ptr<Iterator> input, std::int64_t batch_size, bool drop_remainder, Combine combine)
      : input_(std::move(input)),
        batch_size_(static_cast<std::size_t>(batch_size)),
        drop_remainder_(drop_remainder),
        combine_(std::move(combine)) {}
  std::optional<Element> next() override {
    // pending_ survives an input error, so ignore_errors() downstream loses only the bad element.
    while (pending_.size() < batch_size_) {
      std::optional<Element> e = input_->next();
      if (!e) break;
      pending_.push_back(std::move(*e));
    }
    if (pending_.empty() || (drop_remainder_ && pending_.size() < batch_size_)) return std::nullopt;
    std::vector<Element> group = std::move(pending_);
    pending_.clear();
    return combine_(group);
  }

 private:
  std::unique_ptr<Iterator> input_;
  std::size_t batch_size_;
  bool drop_remainder_;
  Combine combine_;
  std::vector<Element> pending_;
};

// The spec of a batch of elements with spec `element`, padded dims marked as varying.
ElementSpec batch_spec(const ElementSpec& element, std::int64_t batch_size, bool drop_remainder, bool padded) {
  ElementSpec out;
  for (auto [key, spec] : element) {
    if (padded) std::fill(spec.shape.begin(), spec.shape.end(), -1);
    spec.shape.insert(spec.shape.begin(), drop_remainder ? batch_size : -1);
    out[key] = spec;
  }
  return out;
}

// The per-worker batch size when FILE or OFF sharding divides a global batch among `parts` workers.
std::int64_t divided_batch_size(std::int64_t batch_size, int parts, const std::string& transform) {
  if (batch_size % parts == 0) return batch_size / parts;
  const std::int64_t lower = batch_size / parts * parts;
  const std::string multiples = (lower > 0 ? std::to_string(lower) + " or " : "") + std::to_string(lower + parts);
  throw ValueError(transform + ": the global batch size " + std::to_string(batch_size) + " does not divide among " +
                   std::to_string(parts) + " workers (FILE and OFF sharding give each worker 1/" +
                   std::to_string(parts) + " of it); use a global batch size that is a multiple of the number of " +
                   "workers, e.g. " + multiples);
}

class BatchNode final : public detail::UnaryNode {
 public:
  BatchNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t batch_size, BatchOptions options)
      : UnaryNode(std::move(input)), batch_size_(batch_size), options_(options) {}
  std::string name() const override { return "batch"; }
  std::int64_t cardinality() const override {
    return batched_cardinality(input_->cardinality(), batch_size_, options_.drop_remainder);
  }
  ElementSpec element_spec() const override {
    return batch_spec(input_->element_spec(), batch_size_, options_.drop_remainder, false);
  }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<GroupingIterator>(
        input_->make_iterator(), batch_size_, options_.drop_remainder,
        [](const std::vector<Element>& group) { return detail::stack_elements(group, "batch"); });
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<BatchNode>(std::move(input), batch_size_, options_);
  }
  std::shared_ptr<const DatasetNode> with_batches_divided(std::shared_ptr<const DatasetNode> input,
                                                          int parts) const override {
    return std::make_shared<BatchNode>(std::move(input), divided_batch_size(batch_size_, parts, name()), options_);
  }

 private:
  std::int64_t batch_size_;
  BatchOptions options_;
};

class PaddedBatchNode final : public detail::UnaryNode {
 public:
  PaddedBatchNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t batch_size, PaddedBatchOptions options)
      : UnaryNode(std::move(input)),
        batch_size_(batch_size),
        options_(std::move(options)),
        pad_{options_.pad_to_multiple_of, options_.padded_shapes, options_.padding_values} {}
  std::string name() const override { return "padded_batch"; }
  std::int64_t cardinality() const override {
    return batched_cardinality(input_->cardinality(), batch_size_, options_.drop_remainder);
  }
  ElementSpec element_spec() const override {
    ElementSpec out = batch_spec(input_->element_spec(), batch_size_, options_.drop_remainder, true);
    for (const auto& [key, shape] : options_.padded_shapes) {
      auto found = out.find(key);
      if (found == out.end()) continue;
      for (std::size_t d = 0; d < shape.size() && d + 1 < found->second.shape.size(); ++d) {
        found->second.shape[d + 1] = shape[d];
      }
    }
    return out;
  }
  const PaddingStats* padding_stats() const override { return &stats_; }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<GroupingIterator>(input_->make_iterator(), batch_size_, options_.drop_remainder,
                                              [this](const std::vector<Element>& group) {
                                                return detail::pad_and_stack(group, pad_, "padded_batch", &stats_);
                                              });
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<PaddedBatchNode>(std::move(input), batch_size_, options_);
  }
  std::shared_ptr<const DatasetNode> with_batches_divided(std::shared_ptr<const DatasetNode> input,
                                                          int parts) const override {
    return std::make_shared<PaddedBatchNode>(std::move(input), divided_batch_size(batch_size_, parts, name()),
                                             options_);
  }

 private:
  std::int64_t batch_size_;
  PaddedBatchOptions options_;
  detail::PadSpec pad_;
  mutable PaddingStats stats_;
};

class CollateNode final : public detail::UnaryNode {
 public:
  CollateNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t batch_size,
              std::function<Element(const std::vector<Element>&)> collate_fn, BatchOptions options)
      : UnaryNode(std::move(input)), batch_size_(batch_size), collate_fn_(std::move(collate_fn)), options_(options) {}
  std::string name() const override { return "collate"; }
  std::int64_t cardinality() const override {
    return batched_cardinality(input_->cardinality(), batch_size_, options_.drop_remainder);
  }
  const PaddingStats* padding_stats() const override { return &stats_; }
  // The collator's keys are only known by running it: on a copy of the function, so a collator
  // that counts its calls (to draw fresh masks) is not advanced; every dimension varies.
  ElementSpec element_spec() const override {
    detail::ProbeScope probe;
    std::function<Element(const std::vector<Element>&)> copy = collate_fn_;
    GroupingIterator it(input_->make_iterator(), batch_size_, false, copy);
    std::optional<Element> first = it.next();
    if (!first) return {};
    ElementSpec out = first->spec();
    for (auto& entry : out) std::fill(entry.second.shape.begin(), entry.second.shape.end(), -1);
    return out;
  }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<GroupingIterator>(input_->make_iterator(), batch_size_, options_.drop_remainder,
                                              [this](const std::vector<Element>& group) {
                                                Element batch = collate_fn_(group);
                                                record(batch);
                                                return batch;
                                              });
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<CollateNode>(std::move(input), batch_size_, collate_fn_, options_);
  }
  std::shared_ptr<const DatasetNode> with_batches_divided(std::shared_ptr<const DatasetNode> input,
                                                          int parts) const override {
    return std::make_shared<CollateNode>(std::move(input), divided_batch_size(batch_size_, parts, name()), collate_fn_,
                                         options_);
  }

 private:
  // The attention mask marks real tokens (the Hugging Face convention), so it measures the padding.
  void record(const Element& batch) const {
    if (detail::probing()) return;
    if (!batch.contains("attention_mask")) {
      stats_.record(detail::shape_signature(batch), 0, 0);
      return;
    }
    const Tensor& mask = batch.tensor("attention_mask");
    std::int64_t real = 0;
    for (std::int64_t v : mask.to_vector<std::int64_t>()) real += v != 0;
    stats_.record(detail::shape_signature(batch), real, mask.numel());
  }

  std::int64_t batch_size_;
  std::function<Element(const std::vector<Element>&)> collate_fn_;
  BatchOptions options_;
  mutable PaddingStats stats_;
};

void check_batch_size(std::int64_t batch_size, const char* transform) {
  if (batch_size < 1) {
    throw ValueError(std::string(transform) + ": batch_size must be >= 1, got " + std::to_string(batch_size));
  }
}

}  // namespace

Dataset Dataset::batch(std::int64_t batch_size, BatchOptions options) const {
  check_batch_size(batch_size, "batch");
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, options));
}

Dataset Dataset::padded_batch(std::int64_t batch_size, PaddedBatchOptions options) const {
  check_batch_size(batch_size, "padded_batch");
  if (options.pad_to_multiple_of < 1) {
    throw ValueError("padded_batch: pad_to_multiple_of must be >= 1, got " +
                     std::to_string(options.pad_to_multiple_of));
  }
  return Dataset(std::make_shared<PaddedBatchNode>(node_, batch_size, std::move(options)));
}

Dataset Dataset::collate(std::int64_t batch_size, std::function<Element(const std::vector<Element>&)> collate_fn,
                         BatchOptions options) const {
  check_batch_size(batch_size, "collate");
  if (!collate_fn) throw ValueError("collate: the collate function is empty");
  return Dataset(std::make_shared<CollateNode>(node_, batch_size, std::move(collate_fn), options));
}

}  // namespace kestrel::data
