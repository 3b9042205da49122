// bucket_by_sequence_length: batches elements of similar length together, so short sequences are
// not padded to the longest of the whole dataset.
#include <algorithm>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/batching.h"
#include "framework/data/bucket_boundaries.h"
#include "framework/data/dataset_node.h"
#include "framework/logging/logging.h"

namespace kestrel::data {
namespace {

struct Buckets {
  std::vector<std::int64_t> boundaries;
  std::vector<std::int64_t> batch_sizes;
  BucketOptions options;

  // Bucket i holds lengths in [boundaries[i-1], boundaries[i]); the last one is unbounded.
  std::size_t index_of(std::int64_t length) const {
    return static_cast<std::size_t>(std::upper_bound(boundaries.begin(), boundaries.end(), length) -
                                    boundaries.begin());
  }
};

class BucketNode final : public detail::UnaryNode {
 public:
  BucketNode(std::shared_ptr<const detail::DatasetNode> input, std::function<std::int64_t(const Element&)> length,
             Buckets buckets)
      : UnaryNode(std::move(input)), length_(std::move(length)), buckets_(std::move(buckets)) {}
  std::string name() const override { return "bucket_by_sequence_length"; }
  std::int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality : kUnknownCardinality;
  }
  ElementSpec element_spec() const override {
    ElementSpec out = input_->element_spec();
    for (auto& entry : out) {
      std::fill(entry.second.shape.begin(), entry.second.shape.end(), -1);
      entry.second.shape.insert(entry.second.shape.begin(), -1);
    }
    return out;
  }
  const PaddingStats* padding_stats() const override { return &stats_; }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<It>(*this, input_->make_iterator());
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<BucketNode>(std::move(input), length_, buckets_);
  }
  // Every bucket's batch is a global batch, so every bucket's size is divided.
  std::shared_ptr<const DatasetNode> with_batches_divided(std::shared_ptr<const DatasetNode> input,
                                                          int parts) const override {
    Buckets divided = buckets_;
    for (std::int64_t& size : divided.batch_sizes) {
      if (size % parts != 0) throw not_dividing(parts);
      size /= parts;
    }
    return std::make_shared<BucketNode>(std::move(input), length_, std::move(divided));
  }

 private:
  class It final : public Iterator {
   public:
    It(const BucketNode& node, std::unique_ptr<Iterator> input)
        : node_(node), input_(std::move(input)), pending_(node.buckets_.batch_sizes.size()) {}
    std::optional<Element> next() override {
      while (!input_done_) {
        std::optional<Element> e = input_->next();
        if (!e) {
          input_done_ = true;
          break;
        }
        const std::size_t b = node_.bucket_of(*e);
        pending_[b].push_back(std::move(*e));
        if (pending_[b].size() == static_cast<std::size_t>(node_.buckets_.batch_sizes[b])) return emit(b);
      }
      // At the end, the partial buckets in bucket order (unless drop_remainder).
      for (std::size_t b = 0; b < pending_.size(); ++b) {
        if (pending_[b].empty()) continue;
        if (node_.buckets_.options.drop_remainder) {
          pending_[b].clear();
          continue;
        }
        return emit(b);
      }
      return std::nullopt;
    }

   private:
    Element emit(std::size_t b) {
      std::vector<Element> group = std::move(pending_[b]);
      pending_[b].clear();
      Element batch =
          detail::pad_and_stack(group, node_.pad_spec(b, group.front()), "bucket_by_sequence_length", nullptr);
      node_.record(b, group, batch);
      return batch;
    }

    const BucketNode& node_;
    std::unique_ptr<Iterator> input_;
    std::vector<std::vector<Element>> pending_;
    bool input_done_ = false;
  };

  std::size_t bucket_of(const Element& e) const {
    const std::int64_t length = length_(e);
    const std::size_t b = buckets_.index_of(length);
    if (buckets_.options.pad_to_bucket_boundary && b == buckets_.boundaries.size()) {
      throw ValueError("bucket_by_sequence_length: an element has length " + std::to_string(length) +
                       ", beyond the last boundary " + std::to_string(buckets_.boundaries.back()) +
                       ", and pad_to_bucket_boundary has no boundary to pad it to; add a larger boundary or "
                       "filter() long elements out");
    }
    return b;
  }

  // The padding is measured in the sequences element_length measures, as collate measures it in
  // tokens: their lengths are real, and each pads to the bucket's boundary - 1 or, without
  // pad_to_bucket_boundary, to the group's longest rounded up to pad_to_multiple_of.
  void record(std::size_t bucket, const std::vector<Element>& group, const Element& batch) const {
    if (detail::probing()) return;
    std::int64_t real = 0, longest = 0;
    for (const Element& e : group) {
      const std::int64_t length = length_(e);
      real += length;
      longest = std::max(longest, length);
    }
    const std::int64_t multiple = buckets_.options.pad_to_multiple_of;
    const std::int64_t padded_length = buckets_.options.pad_to_bucket_boundary
                                           ? buckets_.boundaries[bucket] - 1
                                           : (longest + multiple - 1) / multiple * multiple;
    stats_.record(detail::shape_signature(batch), real, padded_length * static_cast<std::int64_t>(group.size()));
  }

  // With pad_to_bucket_boundary, every rank-1+ value's first dimension pads to boundary - 1.
  detail::PadSpec pad_spec(std::size_t bucket, const Element& example) const {
    detail::PadSpec spec{buckets_.options.pad_to_multiple_of, {}, buckets_.options.padding_values};
    if (!buckets_.options.pad_to_bucket_boundary) return spec;
    for (const auto& [key, value] : example.values()) {
      const std::size_t rank = spec_of(value).shape.size();
      if (rank == 0) continue;
      std::vector<std::int64_t>& shape = spec.padded_shapes[key];
      shape.assign(rank, -1);
      shape[0] = buckets_.boundaries[bucket] - 1;
    }
    return spec;
  }

  ValueError not_dividing(int parts) const {
    std::string sizes;
    for (std::int64_t size : buckets_.batch_sizes) sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
    return ValueError("bucket_by_sequence_length: the bucket batch sizes [" + sizes + "] do not all divide among " +
                      std::to_string(parts) + " workers (FILE and OFF sharding give each worker 1/" +
                      std::to_string(parts) + " of every bucket's batch); use global bucket batch sizes that are " +
                      "multiples of the number of workers");
  }

  std::function<std::int64_t(const Element&)> length_;
  Buckets buckets_;
  mutable PaddingStats stats_;
};

// The boundaries for options.max_shapes, chosen from every element's length (one pass), logged
// with the padding they leave.
std::vector<std::int64_t> boundaries_from_data(const Dataset& dataset,
                                               const std::function<std::int64_t(const Element&)>& element_length,
                                               const BucketOptions& options) {
  if (dataset.cardinality() == kInfiniteCardinality) {
    throw ValueError(
        "bucket_by_sequence_length: max_shapes chooses boundaries from every element's length, but the "
        "dataset (" +
        dataset.describe() + ") is infinite; bucket before repeat()");
  }
  std::vector<std::int64_t> lengths;
  std::int64_t real = 0;
  for (const Element& e : dataset) {
    lengths.push_back(element_length(e));
    real += lengths.back();
  }
  std::vector<std::int64_t> boundaries =
      choose_bucket_boundaries(lengths, options.max_shapes, options.pad_to_multiple_of);
  std::int64_t padded = 0;
  for (std::int64_t length : lengths) padded += *std::upper_bound(boundaries.begin(), boundaries.end(), length) - 1;
  std::string chosen;
  for (std::int64_t b : boundaries) chosen += (chosen.empty() ? "" : ", ") + std::to_string(b - 1);
  logging::get("kestrel.data")
      ->info(
          "bucket_by_sequence_length: {} sequences pad to [{}] ({} of at most {} shapes): {:.1f}% of the padded "
          "tokens are real",
          lengths.size(), chosen, boundaries.size(), options.max_shapes,
          padded > 0 ? 100.0 * static_cast<double>(real) / static_cast<double>(padded) : 100.0);
  return boundaries;
}

}  // namespace

Dataset Dataset::bucket_by_sequence_length(std::function<std::int64_t(const Element&)> element_length,
                                           std::vector<std::int64_t> bucket_boundaries,
                                           std::vector<std::int64_t> bucket_batch_sizes, BucketOptions options) const {
  if (!element_length) throw ValueError("bucket_by_sequence_length: element_length is empty");
  if (options.max_shapes < 0) {
    throw ValueError("bucket_by_sequence_length: max_shapes must be >= 0 (0: the boundaries are given), got " +
                     std::to_string(options.max_shapes));
  }
  if (options.max_shapes > 0) {
    if (!bucket_boundaries.empty() || bucket_batch_sizes.size() != 1) {
      throw ValueError(
          "bucket_by_sequence_length: max_shapes chooses the boundaries, so give no bucket_boundaries "
          "and one batch size for every bucket (" +
          std::to_string(bucket_boundaries.size()) + " boundaries and " + std::to_string(bucket_batch_sizes.size()) +
          " batch sizes given)");
    }
    bucket_boundaries = boundaries_from_data(*this, element_length, options);
    bucket_batch_sizes.assign(bucket_boundaries.size() + 1, bucket_batch_sizes[0]);
    options.pad_to_bucket_boundary = true;
  }
  if (bucket_batch_sizes.size() != bucket_boundaries.size() + 1) {
    throw ValueError("bucket_by_sequence_length: " + std::to_string(bucket_boundaries.size()) + " boundaries make " +
                     std::to_string(bucket_boundaries.size() + 1) + " buckets, but bucket_batch_sizes has " +
                     std::to_string(bucket_batch_sizes.size()) + " entries; give one batch size per bucket");
  }
  if (!std::is_sorted(bucket_boundaries.begin(), bucket_boundaries.end()) ||
      std::adjacent_find(bucket_boundaries.begin(), bucket_boundaries.end()) != bucket_boundaries.end()) {
    throw ValueError("bucket_by_sequence_length: bucket_boundaries must be strictly increasing");
  }
  for (std::int64_t size : bucket_batch_sizes) {
    if (size < 1) throw ValueError("bucket_by_sequence_length: every bucket batch size must be >= 1");
  }
  if (!bucket_boundaries.empty() && bucket_boundaries.front() < 1) {
    throw ValueError(
        "bucket_by_sequence_length: bucket boundaries must be >= 1 (a boundary is an exclusive upper length)");
  }
  if (options.pad_to_bucket_boundary && bucket_boundaries.empty()) {
    throw ValueError("bucket_by_sequence_length: pad_to_bucket_boundary needs at least one boundary to pad to");
  }
  if (options.pad_to_multiple_of < 1) {
    throw ValueError("bucket_by_sequence_length: pad_to_multiple_of must be >= 1, got " +
                     std::to_string(options.pad_to_multiple_of));
  }
  return Dataset(std::make_shared<BucketNode>(
      node_, std::move(element_length), Buckets{std::move(bucket_boundaries), std::move(bucket_batch_sizes), options}));
}

}  // namespace kestrel::data
