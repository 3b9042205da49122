// InputContext: what a dataset function passed to Strategy::distribute_datasets_from_function is
// told about its input pipeline (tf.distribute.InputContext).
//
//   strategy.distribute_datasets_from_function([](const distribute::InputContext& context) {
//     const std::int64_t per_replica = context.get_per_replica_batch_size(64);   // 8 on 8 replicas
//     return make_dataset().shard(context.num_input_pipelines, context.input_pipeline_id).batch(per_replica);
//   });
#pragma once

#include <cstdint>

namespace kestrel::distribute {

struct InputContext {
  /// Pipelines feeding the replicas (one per worker; 1 on one machine).
  int num_input_pipelines = 1;
  /// This pipeline's index in [0, num_input_pipelines).
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;

  /// The batch each replica gets from a global batch; throws ValueError when it does not divide.
  std::int64_t get_per_replica_batch_size(std::int64_t global_batch_size) const;
};

}  // namespace kestrel::distribute
