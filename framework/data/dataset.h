// Dataset: a lazy pipeline of elements, as tf.data.Dataset. Nothing runs until it is iterated, and
// every pass (each epoch) starts again from the sources.
//
//   auto train = data::Dataset::from_tensor_slices({{"x", images}, {"labels", labels}})
//                    .shuffle(10000, /*seed=*/42)
//                    .batch(64, {.drop_remainder = true})
//                    .prefetch(2);
//   for (const data::Element& batch : train) { ... }      // or: model.fit(train, {.epochs = 5})
//
//   auto text = data::TextLineDataset({"a.txt", "b.txt"})   // {"text": string[]}
//                   .map([&](data::Element e) { return tokenize(e); })
//                   .padded_batch(32, {.pad_to_multiple_of = 32});
//   text.padding_stats();                                  // distinct shapes, efficiency
//
// A Dataset is an immutable value: transforms return new datasets that share the upstream pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/data/element.h"
#include "framework/data/padding_stats.h"

namespace kestrel::data {

/// cardinality() of a dataset that never ends (repeat() without a count).
inline constexpr std::int64_t kInfiniteCardinality = -1;
/// cardinality() when it cannot be known without iterating (filter, generators, files).
inline constexpr std::int64_t kUnknownCardinality = -2;

/// One pass over a dataset.
class Iterator {
 public:
  virtual ~Iterator() = default;
  /// The next element, or nullopt at the end of the pass.
  virtual std::optional<Element> next() = 0;
};

/// Yields the elements of one pass, then nullopt.
using Generator = std::function<std::optional<Element>()>;

struct BatchOptions {
  /// Drop a final batch smaller than batch_size, so every batch has the same shape.
  bool drop_remainder = false;
};

struct PaddedBatchOptions {
  /// Round every padded dimension up to a multiple of this (1: pad to the longest in the batch).
  std::int64_t pad_to_multiple_of = 1;
  /// Per key, the element shape to pad to; -1 pads that dimension to the batch's longest.
  std::map<std::string, std::vector<std::int64_t>> padded_shapes;
  /// Per key, the padding value (default 0; for strings, the empty string).
  std::map<std::string, double> padding_values;
  bool drop_remainder = false;
};

struct BucketOptions {
  /// Per key, the padding value (default 0).
  std::map<std::string, double> padding_values;
  /// Pad each value's first dimension to the bucket's upper boundary - 1 (one length per bucket)
  /// instead of the batch's longest; other dimensions still pad to the batch's longest.
  bool pad_to_bucket_boundary = false;
  /// Round padded dimensions up to a multiple of this.
  std::int64_t pad_to_multiple_of = 1;
  bool drop_remainder = false;
  /// A budget of compiled shapes, with no bucket_boundaries given: one pass over this (finite)
  /// dataset reads every element's length, and the boundaries are the at most max_shapes padded
  /// lengths, multiples of pad_to_multiple_of, that pad least (choose_bucket_boundaries,
  /// bucket_boundaries.h). Every bucket then pads to its boundary and takes the one batch size
  /// given. 0: the boundaries are given.
  int max_shapes = 0;
};

struct ShuffleOptions {
  /// A new order each pass (each epoch), still a pure function of the seed and the pass number.
  bool reshuffle_each_iteration = true;
};

/// How a dataset is split over the workers of a job (tf.data.experimental.AutoShardPolicy; see
/// auto_shard.h for what each does).
enum class AutoShardPolicy {
  auto_,  ///< FILE when the pipeline reads enough files, else DATA (tf.data's default)
  file,   ///< each worker reads its own files
  data,   ///< each worker reads everything and keeps its share of each global batch
  off,    ///< each worker reads everything: every sample W times an epoch
};

struct DistributeOptions {
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::auto_;
};

/// A dataset's options (tf.data.Options), set with Dataset::with_options.
struct Options {
  DistributeOptions experimental_distribute;
};

struct MapOptions {
  /// The output spec; when absent, it is taken from fn applied to the first element.
  std::optional<ElementSpec> output_spec;
};

namespace detail {
class DatasetNode;
}

class Dataset {
 public:
  // ---- sources
  /// Slices every value along its first dimension; all must agree on its size.
  static Dataset from_tensor_slices(const Element& values);
  /// `make` is called at the start of every pass and returns that pass's generator; `name` is
  /// what describe() and errors call the source.
  static Dataset from_generator(std::function<Generator()> make, ElementSpec spec,
                                std::int64_t cardinality = kUnknownCardinality, std::string name = "from_generator");
  /// A source over files read in order: `read(files)` is called at the start of every pass and
  /// returns that pass's generator over those files. FILE auto-sharding (auto_shard.h) gives
  /// each worker a source over every num_workers-th file. Throws ValueError when files is empty.
  static Dataset from_files(std::vector<std::string> files,
                            std::function<Generator(const std::vector<std::string>& files)> read, ElementSpec spec,
                            std::string name);
  /// {"value": int64 scalar} for start, start + step, ... below stop (Python's range).
  static Dataset range(std::int64_t stop);
  static Dataset range(std::int64_t start, std::int64_t stop, std::int64_t step = 1);

  // ---- transforms
  Dataset map(std::function<Element(Element)> fn, MapOptions options = {}) const;
  Dataset filter(std::function<bool(const Element&)> predicate) const;
  /// A buffer of buffer_size elements sampled uniformly; a seed fixes the order on every run.
  Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  ShuffleOptions options = {}) const;
  /// Stacks consecutive elements; they must have equal shapes (else ShapeError: use padded_batch).
  Dataset batch(std::int64_t batch_size, BatchOptions options = {}) const;
  /// Stacks consecutive elements, padding each value to the batch's longest (or padded_shapes),
  /// rounded up to pad_to_multiple_of.
  Dataset padded_batch(std::int64_t batch_size, PaddedBatchOptions options = {}) const;
  /// Groups elements by length into buckets [.., b0), [b0, b1), ... [bn-1, ..), batching each with
  /// its own batch size (bucket_batch_sizes has one more entry than bucket_boundaries). With
  /// options.max_shapes, the boundaries are chosen from the data for that many shapes:
  ///   ds.bucket_by_sequence_length(length, {}, {64}, {.pad_to_multiple_of = 8, .max_shapes = 4});
  /// Its padding statistics count in the sequences element_length measures (tokens, as collate
  /// counts them): their lengths are real, their padded lengths padded.
  Dataset bucket_by_sequence_length(std::function<std::int64_t(const Element&)> element_length,
                                    std::vector<std::int64_t> bucket_boundaries,
                                    std::vector<std::int64_t> bucket_batch_sizes, BucketOptions options = {}) const;
  /// Groups batch_size elements and hands them to a collator (text::DataCollatorWithPadding, ...).
  /// Its padding statistics count the ones of the batch's "attention_mask" as the real values.
  Dataset collate(std::int64_t batch_size, std::function<Element(const std::vector<Element>&)> collate_fn,
                  BatchOptions options = {}) const;
  /// count passes over the input; -1 repeats forever.
  Dataset repeat(std::int64_t count = -1) const;
  Dataset take(std::int64_t count) const;
  Dataset skip(std::int64_t count) const;
  /// Every num_shards-th element starting at index (one worker's share).
  Dataset shard(std::int64_t num_shards, std::int64_t index) const;
  /// Produces up to buffer_size elements ahead on a background thread.
  Dataset prefetch(std::int64_t buffer_size) const;
  /// Skips elements whose production threw a kestrel::Error (a corrupt record, a failed map), and
  /// counts them (ignored_errors()).
  Dataset ignore_errors() const;
  /// The same elements, with these options (tf.data's with_options); a later call's options
  /// replace an earlier one's.
  Dataset with_options(Options options) const;

  // ---- inspection
  ElementSpec element_spec() const;
  /// The options of the outermost with_options, or the defaults.
  Options options() const;
  /// Number of elements, kInfiniteCardinality or kUnknownCardinality.
  std::int64_t cardinality() const;
  /// Merged statistics of every padding transform in the pipeline, since creation or reset.
  PaddingReport padding_stats() const;
  void reset_padding_stats() const;
  /// Errors skipped by ignore_errors() transforms in the pipeline.
  std::int64_t ignored_errors() const;
  /// "from_tensor_slices -> shuffle -> batch"
  std::string describe() const;

  // ---- iteration
  std::unique_ptr<Iterator> make_iterator() const;
  /// Every element of one pass (throws ValueError on an infinite dataset).
  std::vector<Element> to_vector() const;

  class RangeIterator {
   public:
    using value_type = Element;
    using difference_type = std::ptrdiff_t;
    RangeIterator() = default;
    explicit RangeIterator(std::shared_ptr<Iterator> it);
    const Element& operator*() const { return *current_; }
    const Element* operator->() const { return &*current_; }
    RangeIterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(const RangeIterator& other) const { return !current_ && !other.current_; }

   private:
    std::shared_ptr<Iterator> it_;
    std::optional<Element> current_;
  };
  RangeIterator begin() const { return RangeIterator(make_iterator()); }
  RangeIterator end() const { return {}; }

  /// Wraps a pipeline node (how sources and transforms build datasets).
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node);
  /// The outermost node (what auto_shard rewrites).
  const std::shared_ptr<const detail::DatasetNode>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::DatasetNode> node_;
};

/// One element {"text": string[]} per line of each file, in order, without the line ending
/// (ValueError when no file is given).
/// A missing file raises IOError naming it when iteration reaches it.
// NOLINTNEXTLINE(readability-identifier-naming): tf.data's name
Dataset TextLineDataset(std::vector<std::string> filenames);

}  // namespace kestrel::data
