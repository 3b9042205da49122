#include "framework/distribute/merge_call.h"

#include <utility>

#include "framework/distribute/distribution.h"
#include "framework/distribute/replica_context.h"
#include "framework/distribute/replica_rendezvous.h"

namespace kestrel::distribute {

namespace {

// One replica's values as they are: the step of one replica, or of none.
class OwnValues final : public MergedValues {
 public:
  explicit OwnValues(std::vector<Tensor> values) : values_(std::move(values)) {}
  std::vector<Tensor> sum() const override { return values_; }
  Tensor concat(std::size_t index) const override { return values_.at(index); }

 private:
  std::vector<Tensor> values_;
};

// Every replica's values, combined by the strategy's own all-reduce and gather.
class ReplicaValues final : public MergedValues {
 public:
  ReplicaValues(const PerReplicaValues& values, const Distribution& distribution)
      : values_(values), distribution_(distribution) {}
  std::vector<Tensor> sum() const override { return distribution_.all_reduce_sum(values_); }
  Tensor concat(std::size_t index) const override {
    std::vector<Tensor> parts;
    for (const std::vector<Tensor>& replica : values_) parts.push_back(replica.at(index));
    return distribution_.all_gather(parts);
  }

 private:
  const PerReplicaValues& values_;
  const Distribution& distribution_;
};

}  // namespace

void merge_call(std::string_view what, std::vector<Tensor> values, const MergeFn& fn) {
  const ReplicaContext* context = replica_context();
  if (context != nullptr && context->merge_tracer != nullptr) {
    context->merge_tracer->merge(what, std::move(values), fn);
    return;
  }
  if (context == nullptr || context->rendezvous == nullptr) {
    fn(OwnValues(std::move(values)));
    return;
  }
  const Distribution& distribution = *context->distribution;
  context->rendezvous->merge(context->replica_id, what, std::move(values),
                             [&](const PerReplicaValues& all) { fn(ReplicaValues(all, distribution)); });
}

}  // namespace kestrel::distribute
