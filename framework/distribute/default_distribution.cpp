#include "framework/distribute/default_distribution.h"

namespace kestrel::distribute {
namespace {

class DefaultDistribution final : public Distribution {
 public:
  std::string name() const override { return "the default strategy"; }
  int num_replicas_in_sync() const override { return 1; }
  void for_each_replica(const std::function<void(int replica)>& fn) const override { fn(0); }
  // One replica meets nobody: it runs as the caller, outside any replica context, so merge
  // points run their functions at once on its values.
  void call_for_each_replica(const std::function<void(int replica)>& fn) const override { fn(0); }
  // One replica's values are their own sum and gathering: nothing to write anywhere.
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                     std::vector<Tensor> /*reused*/) const override {
    return per_replica.at(0);
  }
  Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor /*reused*/) const override {
    return per_replica.at(0);
  }
};

}  // namespace

const Distribution& default_distribution() {
  static const DefaultDistribution instance;
  return instance;
}

}  // namespace kestrel::distribute
