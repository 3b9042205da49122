// StagedRun: a replicated program run stage by stage. Here, its contractions: a weight gradient
// summed over the replicas is one product over every replica's rows, with the sum's values,
// reading the replicas' operands in place from buffers laid out one after another; and the
// profile of its collectives.
#include "framework/jit/staged_run.h"

#include <gtest/gtest.h>

#include <algorithm>
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

constexpr int kReplicasPerRun = 4;

// Replicas one after another on the calling thread; sums in replica order, as the strategies'.
class InOrderReplicas final : public distribute::Distribution {
 public:
  std::string name() const override { return "in-order replicas"; }
  int num_replicas_in_sync() const override { return kReplicasPerRun; }
  void for_each_replica(const std::function<void(int)>& fn) const override {
    for (int r = 0; r < kReplicasPerRun; ++r) fn(r);
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
// gradient dy [16, 6] (arguments, in `dtype`); the kernel's gradient is (2x)^T dy, summed over the
// replicas. 2x is computed in the replica part, so its slot is a part output; dy is an argument's
// slot. In bfloat16 (as under mixed_bfloat16) the gradient is widened to w's float32 before the sum.
Graph dense_step(DType dtype) {
  Trace trace;
  TraceScope active(trace);
  const Tensor w = trace.input({{8, 6}, DType::float32}, "w");
  const Tensor x = trace.input({{16, 8}, dtype}, "x");
  const Tensor dy = trace.input({{16, 6}, dtype}, "dy");
  const Tensor gradient = ops::cast(ops::matmul(x * 2.0, dy, {.transpose_a = true}), DType::float32);
  Graph graph = trace.finish({w - ops::cross_replica_sum(gradient, kReplicasPerRun) * 0.5});
  graph.alias_output(0, 0);
  return graph;
}

// The step on kReplicasPerRun replicas, one call at a time, keeping its buffers from call to call.
class DenseStep {
 public:
  explicit DenseStep(DType dtype) : stages_(split_at_collectives(dense_step(dtype), 1, kReplicasPerRun, "train_step")) {
    for (const ReplicaStages::Part& part : stages_.parts) executors_.push_back(std::make_unique<Executor>(part.graph));
    for (const auto& e : executors_) parts_.push_back(e.get());
    for (int r = 0; r < kReplicasPerRun; ++r) {
      args_.push_back({ops::cast(random::normal({16, 8}, random::Key(10 + r)), dtype),
                       ops::cast(random::normal({16, 6}, random::Key(20 + r)), dtype)});
    }
  }

  // One call of the program on w; the new w.
  Tensor operator()(const Tensor& w, ProgramProfiler* collectives = nullptr) {
    StagedRun run(stages_, replicas_, buffers_, 1, collectives);
    run.start({w}, {false}, args_);
    run.run_stages(parts_, [&](const std::function<void(const std::vector<const Executor*>&)>& fn) { fn(parts_); });
    return run.value(stages_.output_slots[0], 0);
  }
  // What it should give: w - 0.5 (sum over the replicas of (2x)^T dy), computed in float32.
  Tensor expected(const Tensor& w) const {
    Tensor sum = Tensor::zeros({8, 6});
    for (const std::vector<Tensor>& replica : args_) {
      sum = sum + ops::matmul(ops::cast(replica[0], DType::float32) * 2.0, ops::cast(replica[1], DType::float32),
                              {.transpose_a = true});
    }
    return w - sum * 0.5;
  }

  const ReplicaStages& stages() const { return stages_; }
  const StepBuffers& buffers() const { return buffers_; }

 private:
  ReplicaStages stages_;
  InOrderReplicas replicas_;
  StepBuffers buffers_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::vector<const Executor*> parts_;
  std::vector<std::vector<Tensor>> args_;
};

void expect_near(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5) << what << ", element " << i;
}

class ContractionTest : public ::testing::Test {
 protected:
  DenseStep step_{DType::float32};
};

TEST_F(ContractionTest, TheProductOverEveryReplicasRowsHasTheSumsValues) {
  ASSERT_TRUE(step_.stages().stages[0].collectives.at(0).contraction.has_value()) << step_.stages().to_string();
  const Tensor w = random::normal({8, 6}, random::Key(3));
  // The first call lays out the buffers; the second reuses them.
  for (const char* call : {"first call", "second call"}) expect_near(step_(w), step_.expected(w), call);
}

TEST_F(ContractionTest, TheReplicasRowsOfAPartOutputLieOneAfterAnother) {
  const Tensor w = random::normal({8, 6}, random::Key(3));
  const std::vector<float> first = step_(w).to_vector<float>();
  // 2x's buffers, given back after the contraction read them, for the next call to write.
  const ReplicaStages& stages = step_.stages();
  const ReplicaStages::Contraction& c = *stages.stages[0].collectives.at(0).contraction;
  const std::size_t part = *stages.stages[0].replica_part;
  const std::vector<std::size_t>& outputs = stages.parts[part].output_slots;
  const auto k = static_cast<std::size_t>(std::find(outputs.begin(), outputs.end(), c.a_slot) - outputs.begin());
  ASSERT_LT(k, outputs.size());
  const std::vector<std::vector<Tensor>>& replicas = step_.buffers().part_outputs[part];
  const auto* base = static_cast<const std::byte*>(replicas[0][k].raw_data());
  const std::size_t bytes = 16 * 8 * sizeof(float);
  for (std::size_t r = 1; r < kReplicasPerRun; ++r) {
    EXPECT_EQ(replicas[r][k].raw_data(), base + r * bytes) << "replica " << r;
  }
  // Read in place, the same bits as the first call's.
  EXPECT_EQ(step_(w).to_vector<float>(), first);
}

TEST_F(ContractionTest, AProfileTimesEachCollectiveAContractionAsTheProductItIs) {
  reset_profiles();
  ProgramProfiler profiler("'dense_step' #1 collectives", profiled_collectives(step_.stages(), kReplicasPerRun));
  step_(random::normal({8, 6}, random::Key(3)), &profiler);
  const std::string report = profile_report();
  reset_profiles();
  // w's gradient: [8, 6] over the 4 replicas' 16 rows each.
  EXPECT_NE(report.find("'dense_step' #1 collectives: 1 runs"), std::string::npos) << report;
  EXPECT_NE(report.find("  matmul     "), std::string::npos) << report;
  EXPECT_NE(report.find("  8 x 6 x 64     "), std::string::npos) << report;
}

TEST(StagedRunContraction, ABfloat16ProductWidenedBeforeItsSumIsTakenInFloat32) {
  // The contraction multiplies the bfloat16 rows straight into float32, so no replica's product
  // is rounded to bfloat16 on the way: bfloat16 values and their products are exact in float32,
  // and only the adds round, where rounding each replica's product first would miss by about 2^-9
  // of it.
  DenseStep step(DType::bfloat16);
  ASSERT_TRUE(step.stages().stages[0].collectives.at(0).contraction.has_value()) << step.stages().to_string();
  const Tensor w = random::normal({8, 6}, random::Key(3));
  expect_near(step(w), step.expected(w), "bfloat16 rows");
}

}  // namespace
}  // namespace kestrel::jit
