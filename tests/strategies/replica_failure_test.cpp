// A replica that fails mid-step stops fit with its error; the replicas after it, waiting to add
// their gradients in order, do not hang.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

TEST(ReplicaFailure, AnErrorInOneReplicaStopsTheStep) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    auto scope = tpu.scope();
    Sequential model({layers::Embedding(10, 4), layers::Flatten(), layers::Dense(2)});
    model.compile(
        {.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}), .jit_compile = jit});
    Tensor ids = random::randint({16, 3}, random::Key(1), 0, 10);
    const Tensor labels = random::randint({16}, random::Key(2), 0, 2);
    model.train_on_batch(ids, labels);  // places and (compiled) compiles on good ids
    std::vector<std::int64_t> bad = ids.to_vector<std::int64_t>();
    bad[11 * 3] = 42;  // row 11: replica 5's shard
    const std::string m = error_message<IndexError>([&] {
      model.train_on_batch(Tensor::from_vector<std::int64_t>(bad, {16, 3}), labels);
    });
    EXPECT_TRUE(contains(m, "42")) << m;
    model.train_on_batch(ids, labels);  // and the next step runs
  }
}

}  // namespace
}  // namespace kestrel::distribute
