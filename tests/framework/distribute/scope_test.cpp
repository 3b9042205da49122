// Distribution scopes as Keras has them: variables belong to the strategy whose scope created
// them, a model compiled or fit under another strategy is refused with Keras's error, and a model
// carries its strategy into fit outside the scope.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/distribute/distribution.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/layers.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

// One replica run inline: enough to test scopes and ownership without a strategy library.
class FakeDistribution : public Distribution {
 public:
  explicit FakeDistribution(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  int num_replicas_in_sync() const override { return 1; }
  void for_each_replica(const std::function<void(int)>& fn) const override { fn(0); }
  void call_for_each_replica(const std::function<void(int)>& fn) const override { fn(0); }
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                     std::vector<Tensor> /*reused*/) const override {
    return per_replica.at(0);
  }
  Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor /*reused*/) const override {
    return per_replica.at(0);
  }

 private:
  std::string name_;
};

TEST(DistributionScope, VariablesBelongToTheScopeTheyAreCreatedIn) {
  FakeDistribution tpu("TPUStrategy"), mirrored("MirroredStrategy");
  Variable outside("outside", Tensor::scalar(1.0));
  EXPECT_EQ(current(), nullptr);
  EXPECT_EQ(distribution_of(outside), nullptr);
  {
    DistributionScope scope(tpu);
    EXPECT_EQ(current(), &tpu);
    Variable inside("inside", Tensor::scalar(1.0));
    EXPECT_EQ(distribution_of(inside), &tpu);
    {
      DistributionScope inner(mirrored);
      EXPECT_EQ(distribution_of(Variable("nested", Tensor::scalar(1.0))), &mirrored);
    }
    EXPECT_EQ(current(), &tpu);
  }
  EXPECT_EQ(current(), nullptr);
}

TEST(DistributionScope, RequireCreatedInNamesTheVariableAndBothStrategies) {
  FakeDistribution tpu("TPUStrategy");
  Variable outside("dense/kernel", Tensor::zeros({784, 512}));
  const std::string m = error_message<ValueError>([&] { require_created_in(&tpu, {outside}, "model 'mlp'"); });
  EXPECT_TRUE(contains(m,
                       "Variable (dense/kernel: float32[784,512]) was not created in the distribution strategy "
                       "scope of (TPUStrategy)"))
      << m;
  EXPECT_TRUE(contains(m, "the default strategy")) << m;
  EXPECT_TRUE(contains(m, "auto scope = strategy.scope();")) << m;
}

std::unique_ptr<Sequential> built_mlp() {
  auto model = std::make_unique<Sequential>(
      std::initializer_list<LayerArg>{layers::Dense(4, {.activation = "relu"}), layers::Dense(2)});
  model->build({3, 5});
  return model;
}

TEST(DistributionScope, AModelBuiltOutsideIsRefusedInside) {
  clear_session();
  FakeDistribution tpu("TPUStrategy");
  std::unique_ptr<Sequential> model = built_mlp();
  DistributionScope scope(tpu);
  const std::string m = error_message<ValueError>([&] { model->compile({.optimizer = "adam", .loss = "mse"}); });
  EXPECT_TRUE(contains(m, "was not created in the distribution strategy scope of (TPUStrategy)")) << m;
  EXPECT_TRUE(contains(m, "model '")) << m;
}

TEST(DistributionScope, AnOptimizerMadeOutsideIsRefusedInside) {
  clear_session();
  FakeDistribution tpu("TPUStrategy");
  optimizers::Adam adam;  // its iteration count is a variable, made here, outside the scope
  DistributionScope scope(tpu);
  std::unique_ptr<Sequential> model = built_mlp();
  const std::string m = error_message<ValueError>([&] { model->compile({.optimizer = adam, .loss = "mse"}); });
  EXPECT_TRUE(contains(m, "adam/iteration")) << m;
}

TEST(DistributionScope, MixingTwoStrategiesIsRefused) {
  clear_session();
  FakeDistribution tpu("TPUStrategy"), mirrored("MirroredStrategy");
  std::unique_ptr<Sequential> model;
  {
    DistributionScope scope(tpu);
    model = built_mlp();
    model->compile({.optimizer = "adam", .loss = "mse"});
  }
  EXPECT_EQ(model->distribution(), &tpu);
  DistributionScope other(mirrored);
  const std::string m = error_message<ValueError>([&] {
    model->fit(Tensor::zeros({6, 5}), Tensor::zeros({6, 2}), {.batch_size = 3, .verbose = 0});
  });
  EXPECT_TRUE(contains(m, "scope of (MirroredStrategy)")) << m;
  EXPECT_TRUE(contains(m, "created under TPUStrategy")) << m;
}

TEST(DistributionScope, FitOutsideTheScopeRunsInTheModelsStrategy) {
  clear_session();
  FakeDistribution tpu("TPUStrategy");
  std::unique_ptr<Sequential> model;
  {
    DistributionScope scope(tpu);
    model = std::make_unique<Sequential>(std::initializer_list<LayerArg>{layers::Dense(2)});  // built by fit
    model->compile({.optimizer = "adam", .loss = "mse"});
  }
  model->fit(Tensor::zeros({6, 5}), Tensor::zeros({6, 2}), {.batch_size = 3, .verbose = 0});
  // The weights and the optimizer's slots, made by fit, belong to the model's strategy.
  for (const Variable& v : model->weights()) EXPECT_EQ(distribution_of(v), &tpu) << v.name();
  for (const Variable& v : model->optimizer()->variables()) EXPECT_EQ(distribution_of(v), &tpu) << v.name();
}

TEST(ReplicaScope, NamesTheReplicaAndNests) {
  EXPECT_EQ(replica_context(), nullptr);
  EXPECT_TRUE(records_shared_state());
  {
    ReplicaScope three(3, 8);
    EXPECT_EQ(replica_context()->replica_id, 3);
    EXPECT_EQ(replica_context()->num_replicas, 8);
    EXPECT_FALSE(records_shared_state());
    {
      ReplicaScope zero(0, 8);
      EXPECT_TRUE(records_shared_state());
    }
    EXPECT_EQ(replica_context()->replica_id, 3);
  }
  EXPECT_EQ(replica_context(), nullptr);
}

}  // namespace
}  // namespace kestrel::distribute
