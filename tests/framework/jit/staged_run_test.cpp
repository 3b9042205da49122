// StagedRun: a replicated program run stage by stage. Here, its contractions: a weight gradient
// summed over the replicas is one product over every replica's rows, with the sum's values,
// reading the replicas' operands in place from buffers laid out one after another; and the
// profile of its collectives.
#include "framework/jit/staged_run.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/random.h"
#include "framework/distribute/distribution.h"
#include "framework/jit/executor.h"
#include "framework/jit/profile.h"
#include "framework/jit/replica_stages.h"
#include "framework/jit/trace.h"
#include "framework/ops/collective.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::jit {
namespace {

constexpr int kReplicas = 4;

// Replicas one after another on the calling thread; sums in replica order, as the strategies'.
class InOrderReplicas final : public distribute::Distribution {
 public:
  std::string name() const override { return "in-order replicas"; }
  int num_replicas_in_sync() const override { return kReplicas; }
  void for_each_replica(const std::function<void(int)>& fn) const override {
    for (int r = 0; r < kReplicas; ++r) fn(r);
  }
  void call_for_each_replica(const std::function<void(int)>& fn) const override { for_each_replica(fn); }
  std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica,
                                     std::vector<Tensor> /*reused*/) const override {
    std::vector<Tensor> sums = per_replica[0];
    for (std::size_t r = 1; r < per_replica.size(); ++r) {
      for (std::size_t k = 0; k < sums.size(); ++k) sums[k] = sums[k] + per_replica[r][k];
    }
    return sums;
  }
  Tensor all_gather(const std::vector<Tensor>& per_replica, Tensor /*reused*/) const override {
    return ops::concat(per_replica, 0);
  }
};

// An SGD step of a Dense kernel w [8, 6] over a replica's 16 rows: x [16, 8] and the outputs'
// gradient dy [16, 6] (arguments); the kernel's gradient is (2x)^T dy, summed over the replicas.
// 2x is computed in the replica part, so its slot is a part output; dy is an argument's slot.
Graph dense_step() {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{8, 6}, DType::float32}, "w");
  const Tensor x = trace.input({{16, 8}, DType::float32}, "x");
  const Tensor dy = trace.input({{16, 6}, DType::float32}, "dy");
  const Tensor gradient = ops::matmul(x * 2.0, dy, {.transpose_a = true});
  Graph graph = trace.finish({w - ops::cross_replica_sum(gradient, kReplicas) * 0.5});
  graph.alias_output(0, 0);
  return graph;
}

class ContractionTest : public ::testing::Test {
 protected:
  ContractionTest() : stages_(split_at_collectives(dense_step(), 1, kReplicas, "train_step")) {
    for (const ReplicaStages::Part& part : stages_.parts) executors_.push_back(std::make_unique<Executor>(part.graph));
    for (const auto& e : executors_) parts_.push_back(e.get());
    for (int r = 0; r < kReplicas; ++r) {
      args_.push_back({random::normal({16, 8}, random::Key(10 + r)), random::normal({16, 6}, random::Key(20 + r))});
    }
  }

  // One call of the program on w; the new w.
  Tensor step(const Tensor& w, ProgramProfiler* collectives = nullptr) {
    StagedRun run(stages_, replicas_, buffers_, 1, collectives);
    run.start({w}, {false}, args_);
    run.run_stages(parts_, [&](const std::function<void(const std::vector<const Executor*>&)>& fn) { fn(parts_); });
    return run.value(stages_.output_slots[0], 0);
  }

  ReplicaStages stages_;
  InOrderReplicas replicas_;
  StepBuffers buffers_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::vector<const Executor*> parts_;
  std::vector<std::vector<Tensor>> args_;
};

TEST_F(ContractionTest, TheProductOverEveryReplicasRowsHasTheSumsValues) {
  ASSERT_TRUE(stages_.stages[0].collectives.at(0).contraction.has_value()) << stages_.to_string();
  const Tensor w = random::normal({8, 6}, random::Key(3));
  Tensor sum = Tensor::zeros({8, 6});
  for (const std::vector<Tensor>& replica : args_)
    sum = sum + ops::matmul(replica[0] * 2.0, replica[1], {.transpose_a = true});
  const std::vector<float> want = (w - sum * 0.5).to_vector<float>();
  for (int call = 0; call < 2; ++call) {  // the first call lays out the buffers; the second reuses them
    const std::vector<float> got = step(w).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "call " << call << ", " << i;
  }
}

TEST_F(ContractionTest, TheReplicasRowsOfAPartOutputLieOneAfterAnother) {
  const Tensor w = random::normal({8, 6}, random::Key(3));
  const std::vector<float> first = step(w).to_vector<float>();
  // 2x's buffers, given back after the contraction read them, for the next call to write.
  const ReplicaStages::Contraction& c = *stages_.stages[0].collectives.at(0).contraction;
  const std::size_t part = *stages_.stages[0].replica_part;
  const std::vector<std::size_t>& outputs = stages_.parts[part].output_slots;
  const auto k = static_cast<std::size_t>(std::find(outputs.begin(), outputs.end(), c.a_slot) - outputs.begin());
  ASSERT_LT(k, outputs.size());
  const auto* base = static_cast<const std::byte*>(buffers_.part_outputs[part][0][k].raw_data());
  const std::size_t bytes = 16 * 8 * sizeof(float);
  for (std::size_t r = 1; r < kReplicas; ++r) {
    EXPECT_EQ(buffers_.part_outputs[part][r][k].raw_data(), base + r * bytes) << "replica " << r;
  }
  // Read in place, the same bits as the first call's.
  EXPECT_EQ(step(w).to_vector<float>(), first);
}

TEST_F(ContractionTest, AProfileTimesEachCollectiveAContractionAsTheProductItIs) {
  reset_profiles();
  ProgramProfiler profiler("'dense_step' #1 collectives", profiled_collectives(stages_, kReplicas));
  step(random::normal({8, 6}, random::Key(3)), &profiler);
  const std::string report = profile_report();
  reset_profiles();
  // w's gradient: [8, 6] over the 4 replicas' 16 rows each.
  EXPECT_NE(report.find("'dense_step' #1 collectives: 1 runs"), std::string::npos) << report;
  EXPECT_NE(report.find("  matmul     "), std::string::npos) << report;
  EXPECT_NE(report.find("  8 x 6 x 64     "), std::string::npos) << report;
}

}  // namespace
}  // namespace kestrel::jit
