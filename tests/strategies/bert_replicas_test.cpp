// A BERT-style classifier (padded token batches, named inputs, AdamW) trains the same on 8
// replicas as on one, eagerly and compiled.
#include <gtest/gtest.h>

#include <cmath>

#include "strategies/tpu_strategy.h"
#include "tests/strategies/bert_training.h"

namespace kestrel::distribute {
namespace {

void expect_same_weights(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    std::vector<float> g = got[i].to_vector<float>(), w = want[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << "weight " << i << " element " << k;
    }
  }
}

TEST(BertReplicas, EightTrainLikeOneEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    expect_same_weights(testing::train_small_bert(&tpu, jit), testing::train_small_bert(nullptr, jit));
  }
}

}  // namespace
}  // namespace kestrel::distribute
