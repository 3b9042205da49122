// PerReplica: one value for each replica, in replica order — what Strategy::run returns and what a
// distributed dataset yields (tf.distribute's PerReplica).
//
//   distribute::PerReplica<Tensor> losses = strategy.run([&](int replica) { return step(shards[replica]); });
//   Tensor total = strategy.reduce(distribute::ReduceOp::SUM, losses);
#pragma once

#include <cstddef>
#include <vector>

namespace kestrel::distribute {

template <class T>
struct PerReplica {
  std::vector<T> values;

  int size() const { return static_cast<int>(values.size()); }
  const T& operator[](int replica) const { return values[static_cast<std::size_t>(replica)]; }
};

/// How Strategy::reduce combines the replicas' values (tf.distribute.ReduceOp).
// NOLINTNEXTLINE(readability-identifier-naming): tf.distribute.ReduceOp's names
enum class ReduceOp { SUM, MEAN };

}  // namespace kestrel::distribute
