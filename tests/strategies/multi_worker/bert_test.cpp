// A BERT-style classifier (padded token batches, named inputs, AdamW) trains on 8
// replicas over the workers within 1e-5 of one replica after 20 steps, eagerly and compiled; every
// worker ends with the same bits, and a second run repeats them.
#include <gtest/gtest.h>

#include <cmath>

#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"
#include "tests/strategies/bert_training.h"
#include "tests/strategies/multi_worker/same_on_every_worker.h"
#include "tests/strategies/multi_worker/this_job.h"

namespace kestrel::distribute {
namespace {

using testing::workers;
TEST(MultiWorkerBert, EightReplicasOverTheWorkersTrainLikeOneAndRepeatTheirBits) {
  const MultiWorkerMirroredStrategy strategy({.local_replicas = 8 / workers().count()});
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    const std::vector<Tensor> one = testing::train_small_bert(nullptr, jit),
                              eight = testing::train_small_bert(&strategy, jit),
                              again = testing::train_small_bert(&strategy, jit);
    ASSERT_EQ(eight.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      const std::vector<float> g = eight[i].to_vector<float>(), w = one[i].to_vector<float>();
      for (std::size_t k = 0; k < w.size(); ++k) {
        ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
      }
      EXPECT_EQ(again[i].to_vector<float>(), g) << "weight " << i << " differs between two runs";
    }
    EXPECT_TRUE(testing::same_on_every_worker(eight));
  }
}

}  // namespace
}  // namespace kestrel::distribute
