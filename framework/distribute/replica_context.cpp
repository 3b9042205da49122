#include "framework/distribute/replica_context.h"

#include "framework/distribute/distribution.h"

namespace kestrel::distribute {
namespace {
thread_local const ReplicaContext* current_replica = nullptr;
}  // namespace

const ReplicaContext* replica_context() { return current_replica; }

int ReplicaContext::replica_id_in_sync_group() const {
  return distribution != nullptr ? distribution->first_local_replica() + replica_id : replica_id;
}

int ReplicaContext::num_replicas_in_sync() const {
  return distribution != nullptr ? distribution->num_replicas_in_sync() : num_replicas;
}

ReplicaScope::ReplicaScope(int replica_id, int num_replicas)
    : previous_(current_replica), context_{.replica_id = replica_id, .num_replicas = num_replicas} {
  current_replica = &context_;
}

ReplicaScope::ReplicaScope(ReplicaContext context) : previous_(current_replica), context_(std::move(context)) {
  current_replica = &context_;
}

ReplicaScope::~ReplicaScope() { current_replica = previous_; }

}  // namespace kestrel::distribute
