// auto_shard: tf.data's AutoShardPolicy as a rewrite of the pipeline's chain of nodes. FILE and
// OFF rebuild the chain from its source upward (each node's with_input), dividing the outermost
// batch; DATA leaves the pipeline alone for the strategy to split each global batch.
#include "framework/data/auto_shard.h"

#include <optional>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"
#include "framework/logging/logging.h"

namespace kestrel::data {
namespace {

using NodePtr = std::shared_ptr<const detail::DatasetNode>;

// The pipeline's nodes, outermost first and the source last. Each pointer shares ownership of the
// whole pipeline (aliasing), since only the outermost node is held by a shared_ptr of its own.
std::vector<NodePtr> chain_of(const Dataset& dataset) {
  std::vector<NodePtr> chain;
  for (const detail::DatasetNode* n = dataset.node().get(); n != nullptr; n = n->input()) {
    chain.emplace_back(dataset.node(), n);
  }
  return chain;
}

// The position of the outermost batching transform: the one whose batches are the global batch.
std::optional<std::size_t> batching_index(const std::vector<NodePtr>& chain) {
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
    // Dividing by one always succeeds, so this only asks whether the node batches.
    if (chain[i]->with_batches_divided(chain[i + 1], 1)) return i;
  }
  return std::nullopt;
}

// Worker `index`'s files: index, index + W, index + 2W, ...
std::vector<std::string> files_of_worker(const std::vector<std::string>& files, int num_workers, int index) {
  std::vector<std::string> mine;
  for (std::size_t i = static_cast<std::size_t>(index); i < files.size(); i += static_cast<std::size_t>(num_workers)) {
    mine.push_back(files[i]);
  }
  return mine;
}

// The chain rebuilt from its source up: the source over `files` (all of them when empty), the
// batching node's sizes divided by num_workers, every other node the same over its new input.
Dataset rebuild(const std::vector<NodePtr>& chain, std::size_t batching, const std::vector<std::string>& files,
                int num_workers) {
  NodePtr node = files.empty() ? chain.back() : chain.back()->with_files(files);
  for (std::size_t i = chain.size() - 1; i-- > 0;) {
    node = i == batching ? chain[i]->with_batches_divided(node, num_workers) : chain[i]->with_input(node);
    if (!node) {
      throw ValueError("auto_shard: the transform '" + chain[i]->name() + "' cannot be rebuilt over a sharded input");
    }
  }
  return Dataset(node);
}

// What FILE sharding needs and the pipeline lacks, phrased for the error of an explicit FILE
// policy and for AUTO's fallback warning; nullopt when FILE applies.
struct FileCheck {
  std::string error;   // FILE was asked for: what is wrong and the fix
  std::string reason;  // AUTO falls back to DATA: why, as tf.data's warning says it
};

std::optional<FileCheck> check_file_source(const Dataset& dataset, const std::vector<NodePtr>& chain, int num_workers) {
  const std::vector<std::string> files = chain.back()->files();
  const std::string source = chain.back()->name();
  if (files.empty()) {
    return FileCheck{
        "FILE sharding needs a file-based source (TextLineDataset, TFRecordDataset, "
        "Dataset::from_files) but the pipeline (" +
            dataset.describe() + ") starts at " + source + "; set the auto_shard_policy to DATA or OFF",
        "found an unshardable source dataset: " + source};
  }
  if (files.size() < static_cast<std::size_t>(num_workers)) {
    const std::string count = std::to_string(files.size()) + " file(s)";
    const std::string workers = std::to_string(num_workers) + " workers";
    return FileCheck{"FILE sharding: the dataset (" + dataset.describe() + ") only has " + count + ", not enough for " +
                         workers + " to read files of their own; set the auto_shard_policy " +
                         "to DATA or OFF, or split the input into at least " + std::to_string(num_workers) + " files",
                     "the dataset only has " + count + " for " + workers};
  }
  return std::nullopt;
}

std::string no_batching_error(AutoShardPolicy policy, const Dataset& dataset, int num_workers) {
  return to_string(policy) + " sharding divides the global batch among the " + std::to_string(num_workers) +
         " workers, but the pipeline (" + dataset.describe() +
         ") has no batch transform (batch, padded_batch, collate, bucket_by_sequence_length); add one, or set the "
         "auto_shard_policy to DATA";
}

// FILE or OFF, as asked for: every failure is an error naming the pipeline.
ShardedDataset apply_per_worker(const Dataset& dataset, AutoShardPolicy policy, int num_workers, int worker_index) {
  const std::vector<NodePtr> chain = chain_of(dataset);
  std::vector<std::string> files;
  if (policy == AutoShardPolicy::file) {
    if (std::optional<FileCheck> failed = check_file_source(dataset, chain, num_workers)) {
      throw ValueError(failed->error);
    }
    files = files_of_worker(chain.back()->files(), num_workers, worker_index);
  }
  const std::optional<std::size_t> batching = batching_index(chain);
  if (!batching) throw ValueError(no_batching_error(policy, dataset, num_workers));
  try {
    return {rebuild(chain, *batching, files, num_workers), policy, ""};
  } catch (const ValueError& e) {
    throw ValueError(to_string(policy) + " sharding of the pipeline (" + dataset.describe() + "): " + e.what());
  }
}

// AUTO: FILE when it applies, else DATA with the reason logged, as tf.data's warning.
ShardedDataset apply_auto(const Dataset& dataset, int num_workers, int worker_index) {
  const std::vector<NodePtr> chain = chain_of(dataset);
  std::string reason;
  const std::optional<std::size_t> batching = batching_index(chain);
  if (std::optional<FileCheck> failed = check_file_source(dataset, chain, num_workers)) {
    reason = failed->reason;
  } else if (!batching) {
    reason = "the pipeline (" + dataset.describe() + ") has no batch transform to divide among the workers";
  } else {
    try {
      const auto files = files_of_worker(chain.back()->files(), num_workers, worker_index);
      return {rebuild(chain, *batching, files, num_workers), AutoShardPolicy::file, ""};
    } catch (const ValueError& e) {
      reason = e.what();  // a batch size that does not divide among the workers
    }
  }
  logging::get("kestrel.data")
      ->warn(
          "AUTO sharding policy will apply DATA sharding policy as it failed to apply FILE sharding policy: {}. Every "
          "worker reads the whole dataset and keeps its share of each global batch; set the dataset's "
          "auto_shard_policy to DATA (data::Options, with_options) to choose this and silence the warning",
          reason);
  return {dataset, AutoShardPolicy::data, reason};
}

}  // namespace

ShardedDataset auto_shard(const Dataset& dataset, int num_workers, int worker_index) {
  if (num_workers < 1 || worker_index < 0 || worker_index >= num_workers) {
    throw ValueError("auto_shard: need num_workers >= 1 and 0 <= worker_index < num_workers; got num_workers=" +
                     std::to_string(num_workers) + ", worker_index=" + std::to_string(worker_index));
  }
  if (num_workers == 1) return {dataset, AutoShardPolicy::data, ""};
  const AutoShardPolicy policy = dataset.options().experimental_distribute.auto_shard_policy;
  switch (policy) {
    case AutoShardPolicy::data: return {dataset, AutoShardPolicy::data, ""};
    case AutoShardPolicy::file:
    case AutoShardPolicy::off: return apply_per_worker(dataset, policy, num_workers, worker_index);
    case AutoShardPolicy::auto_: return apply_auto(dataset, num_workers, worker_index);
  }
  throw ValueError("auto_shard: unknown auto_shard_policy " + to_string(policy));
}

std::string to_string(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::auto_: return "AUTO";
    case AutoShardPolicy::file: return "FILE";
    case AutoShardPolicy::data: return "DATA";
    case AutoShardPolicy::off: return "OFF";
  }
  return "AutoShardPolicy(" + std::to_string(static_cast<int>(policy)) + ")";
}

}  // namespace kestrel::data
