// BatchSource: what the training loops read batches from — in-memory arrays or a data::Dataset
// (internal to fit / evaluate / predict).
//
//   auto source = detail::dataset_source(train, /*steps=*/0, "fit", "steps_per_epoch");
//   source->start_epoch(0);
//   while (std::optional<Batch> b = source->next()) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "framework/core/random.h"
#include "framework/data/dataset.h"
#include "framework/distribute/distributed_dataset.h"
#include "framework/distribute/distribution.h"
#include "framework/model/array_batches.h"

namespace kestrel::detail {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// Batches in one epoch, or -1 when only iterating can tell.
  virtual std::int64_t steps() const = 0;
  /// Begins an epoch: a new order for arrays, a new pass for a finite dataset.
  virtual void start_epoch(int epoch) = 0;
  /// The next batch of the epoch, or nullopt at its end.
  virtual std::optional<Batch> next() = 0;
  /// Called after each epoch, e.g. to log what padding cost.
  virtual void end_epoch(const char* method) {}
  /// True when data read on across epochs ended before the steps asked for (Keras: "ran out of data").
  virtual bool ran_out() const { return false; }
  /// True when each worker reads batches of its own (FILE or OFF auto-sharding): a step's global
  /// batch is every worker's together. False when each worker reads the global batch (DATA).
  virtual bool per_worker() const { return false; }
};

/// Arrays, reshuffled each epoch by shuffle_key when given; at most max_steps batches (0: all).
std::unique_ptr<BatchSource> array_source(ArrayBatches batches, std::optional<random::Key> shuffle_key = std::nullopt,
                                          std::int64_t max_steps = 0);

/// A dataset whose elements are whole batches. Keys "labels" (or "label", "y") are the targets,
/// "sample_weight" the sample weights, and the rest the inputs: "x" alone is a single tensor,
/// other keys are passed by name. For a model of several outputs (`output_names`), the keys
/// named after its outputs are their targets. `steps` batches make an epoch (0: one pass). An infinite
/// dataset needs steps and, like any dataset whose epochs are not whole passes, is read on across
/// epochs. `method` and `steps_option` name the caller and its option in errors.
///
/// Under a `distribution` of several workers, the dataset is auto-sharded by its policy
/// (data::auto_shard): with DATA every worker reads the global batches; with FILE or OFF each
/// reads its own part of them, in step with the others (worker_batches.h).
std::unique_ptr<BatchSource> dataset_source(const data::Dataset& dataset, std::int64_t steps, const char* method,
                                            const char* steps_option,
                                            const distribute::Distribution* distribution = nullptr,
                                            const std::vector<std::string>& output_names = {});

/// A dataset distributed already (DistributedDataset::worker_batches: each step this worker's
/// part of the global batch, the pass ending at the same step on every worker of
/// `distribution`); alone, its parts are the global batches. Throws ValueError when it was distributed over another number of
/// replicas than `distribution` runs here.
std::unique_ptr<BatchSource> distributed_source(const distribute::DistributedDataset& dataset, std::int64_t steps,
                                                const char* method, const char* steps_option,
                                                const distribute::Distribution& distribution,
                                                const std::vector<std::string>& output_names = {});

/// Splits a batch element by the key convention above.
Batch batch_from_element(const data::Element& element, const std::vector<std::string>& output_names = {});

}  // namespace kestrel::detail
