// The nodes behind data::Dataset: each source or transform is one node that makes iterators.
// Internal to framework/data; other libraries build sources with Dataset::from_generator.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "framework/data/dataset.h"

namespace kestrel::data::detail {

class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  /// A new pass over the node's elements.
  virtual std::unique_ptr<Iterator> make_iterator() const = 0;
  /// The transform's name, as in tf.data ("padded_batch"); errors and describe() use it.
  virtual std::string name() const = 0;
  virtual std::int64_t cardinality() const = 0;
  /// By default, the spec of the first element of a probing pass (as tf.data traces a function
  /// once): dimensions are those of that element.
  virtual ElementSpec element_spec() const;
  /// The node this one reads from, if any.
  virtual const DatasetNode* input() const { return nullptr; }
  virtual const PaddingStats* padding_stats() const { return nullptr; }
  /// The same transform over another input, with fresh state (pass counts, padding statistics):
  /// how auto_shard rebuilds a pipeline above its sharded source. Sources return null.
  virtual std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> /*input*/) const {
    return nullptr;
  }
  /// For a batching transform (batch, padded_batch, collate, bucket_by_sequence_length): the
  /// same transform over `input` with every batch size divided by `parts` (ValueError naming
  /// the transform when one does not divide). Null for a transform that does not batch.
  virtual std::shared_ptr<const DatasetNode> with_batches_divided(std::shared_ptr<const DatasetNode> /*input*/,
                                                                  int /*parts*/) const {
    return nullptr;
  }
  /// For a source over files (Dataset::from_files): its files, else empty.
  virtual std::vector<std::string> files() const { return {}; }
  /// For a source over files: the same source over `files`. Null otherwise.
  virtual std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> /*files*/) const { return nullptr; }
  /// For with_options: its options. Null otherwise.
  virtual const Options* options() const { return nullptr; }
  virtual std::int64_t ignored_errors() const { return 0; }
};

/// A node with one input.
class UnaryNode : public DatasetNode {
 public:
  explicit UnaryNode(std::shared_ptr<const DatasetNode> input) : input_(std::move(input)) {}
  const DatasetNode* input() const override { return input_.get(); }
  /// Every transform says how it is rebuilt over another input.
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override = 0;

 protected:
  std::shared_ptr<const DatasetNode> input_;
};

/// An iterator over a generator's elements (the sources built from generators).
class GeneratorIterator final : public Iterator {
 public:
  explicit GeneratorIterator(Generator generator) : generator_(std::move(generator)) {}
  std::optional<Element> next() override { return generator_(); }

 private:
  Generator generator_;
};

/// True on a thread that is running a pipeline only to learn its element_spec: such a probe must
/// leave no trace (no pass counted, no padding recorded), or asking for the spec would change
/// the next epoch's order and the statistics.
bool probing();

/// Marks the current thread as probing for its lifetime.
class ProbeScope {
 public:
  ProbeScope();
  ~ProbeScope();
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  bool previous_;
};

/// Counts passes, so each pass can draw fresh randomness that is still a function of the seed.
class PassCounter {
 public:
  /// The number of this pass; a probe gets the next pass's number without taking it.
  std::uint64_t next() const { return probing() ? passes_.load() : passes_.fetch_add(1); }

 private:
  mutable std::atomic<std::uint64_t> passes_{0};
};

}  // namespace kestrel::data::detail
