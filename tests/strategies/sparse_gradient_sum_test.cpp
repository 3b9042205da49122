// A compiled replica step sums an embedding's gradient by gathering every replica's rows
// (jit::SparseCrossReplicaSum): the table it builds is the one a single replica would build from
// the whole global batch, bit for bit, with no dense all-reduce of the table in the program.
#include <gtest/gtest.h>

#include <vector>

#include "framework/core/random.h"
#include "framework/core/variable.h"
#include "framework/distribute/merge_call.h"
#include "framework/jit/replicated_function.h"
#include "framework/ops/shape_ops.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::LogCapture;

constexpr int kSparseReplicas = 8;
const Shape kTable{50, 8};

// Each replica's token ids (few rows, many repeated ids) and the gradient rows for them.
struct Shards {
  std::vector<Tensor> ids, rows;
};
Shards shards() {
  Shards s;
  for (int r = 0; r < kSparseReplicas; ++r) {
    s.ids.push_back(random::randint({2, 3}, random::Key(10 + r), 0, 6, DType::int64));
    s.rows.push_back(random::normal({2, 3, 8}, random::Key(30 + r)));
  }
  return s;
}

TEST(SparseGradientSum, AnEmbeddingsGradientOverEightReplicasIsOneReplicasOverTheGlobalBatch) {
  const Shards data = shards();
  TPUStrategy tpu(TPUClusterResolver::local());
  Variable table = [&] {
    auto scope = tpu.scope();
    return Variable("table", Tensor::zeros(kTable));
  }();
  jit::ReplicatedFunction step(
      {table},
      [&](const jit::Args& args) {
        const Tensor gradient = ops::scatter_add(args.at("ids"), args.at("rows"), kTable);
        merge_call("apply", {gradient}, [&](const MergedValues& merged) { table.assign(merged.sum().at(0)); });
        return std::vector<Tensor>{};
      },
      "embedding_step", tpu);
  std::vector<jit::Args> per_replica;
  for (int r = 0; r < kSparseReplicas; ++r) {
    per_replica.push_back(
        {{"ids", data.ids[static_cast<std::size_t>(r)]}, {"rows", data.rows[static_cast<std::size_t>(r)]}});
  }
  LogCapture log("kestrel.jit");
  step(per_replica);

  // Gathered, not summed: the stages exchange the ids and the rows, never a table.
  EXPECT_TRUE(contains(log.text(), "-> all_gather x2; stage 1: shared part (")) << log.text();
  EXPECT_FALSE(contains(log.text(), "cross_replica_sum")) << log.text();

  const Tensor want = ops::scatter_add(ops::concat(data.ids, 0), ops::concat(data.rows, 0), kTable);
  const Tensor got = table.value();
  ASSERT_EQ(got.spec(), want.spec());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());  // bit for bit: one order of adds
}

}  // namespace
}  // namespace kestrel::distribute
