#include "framework/distribute/replica_context.h"

namespace kestrel::distribute {
namespace {
thread_local const ReplicaContext* current_replica = nullptr;
}  // namespace

const ReplicaContext* replica_context() { return current_replica; }

ReplicaScope::ReplicaScope(int replica_id, int num_replicas)
    : previous_(current_replica), context_{.replica_id = replica_id, .num_replicas = num_replicas} {
  current_replica = &context_;
}

ReplicaScope::ReplicaScope(ReplicaContext context) : previous_(current_replica), context_(std::move(context)) {
  current_replica = &context_;
}

ReplicaScope::~ReplicaScope() { current_replica = previous_; }

}  // namespace kestrel::distribute
