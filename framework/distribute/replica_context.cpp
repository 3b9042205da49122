#include "framework/distribute/replica_context.h"

namespace kestrel::distribute {
namespace {
thread_local const ReplicaContext* current_replica = nullptr;
}  // namespace

const ReplicaContext* replica_context() { return current_replica; }

ReplicaScope::ReplicaScope(int replica_id, int num_replicas)
    : previous_(current_replica), context_{replica_id, num_replicas, Tensor()} {
  current_replica = &context_;
}

ReplicaScope::ReplicaScope(Tensor id, int num_replicas)
    : previous_(current_replica), context_{0, num_replicas, std::move(id)} {
  current_replica = &context_;
}

ReplicaScope::~ReplicaScope() { current_replica = previous_; }

}  // namespace kestrel::distribute
