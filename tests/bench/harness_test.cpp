// bench::Harness's records: a case measured again by the same source becomes a round of it,
// represented by its median round, and the rounds' medians survive the JSON a peer prints.
#include "bench/harness.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kestrel::bench {
namespace {

Record measured(const std::string& source, double median_ms, double samples_per_s) {
  Record r;
  r.name = "train_step";
  r.params = {{"model", "bert_tiny"}, {"mode", "jit"}};
  r.source = source;
  r.timing = {.median_ms = median_ms, .min_ms = median_ms - 1, .p90_ms = median_ms + 1, .repeats = 30};
  r.figures = {{"samples_per_s", samples_per_s}};
  return r;
}

TEST(HarnessRounds, ACaseMeasuredOnceHasNoRounds) {
  Harness harness("harness_test", "");
  harness.add(measured("kestrel", 80, 400));
  ASSERT_EQ(harness.records().size(), 1u);
  EXPECT_TRUE(harness.records().front().round_medians_ms.empty());
}

TEST(HarnessRounds, TheMedianRoundStandsForTheCaseWithEveryRoundBesideIt) {
  Harness harness("harness_test", "");
  harness.add(measured("kestrel", 80, 400));
  harness.add(measured("kestrel", 120, 266));  // a burst of other work on the machine
  harness.add(measured("kestrel", 82, 390));
  ASSERT_EQ(harness.records().size(), 1u);
  const Record& r = harness.records().front();
  EXPECT_EQ(r.timing.median_ms, 82);
  EXPECT_EQ(r.timing.min_ms, 81);
  EXPECT_EQ(r.figure("samples_per_s"), 390) << "the figures are the median round's own";
  EXPECT_EQ(r.round_medians_ms, (std::vector<double>{80, 120, 82})) << "in the order measured";
}

TEST(HarnessRounds, AnEvenCountTakesTheLowerOfTheMiddleTwo) {
  Harness harness("harness_test", "");
  for (double ms : {90, 70, 100, 80}) harness.add(measured("kestrel", ms, 1));
  EXPECT_EQ(harness.records().front().timing.median_ms, 80);
}

TEST(HarnessRounds, EachSourceKeepsItsOwnRounds) {
  Harness harness("harness_test", "");
  harness.add(measured("kestrel", 80, 400));
  harness.add(measured("torch", 130, 246));
  harness.add(measured("kestrel", 84, 380));
  harness.add(measured("torch", 110, 290));
  ASSERT_EQ(harness.records().size(), 2u);
  EXPECT_EQ(harness.records()[0].source, "kestrel");
  EXPECT_EQ(harness.records()[0].round_medians_ms, (std::vector<double>{80, 84}));
  EXPECT_EQ(harness.records()[1].source, "torch");
  EXPECT_EQ(harness.records()[1].round_medians_ms, (std::vector<double>{130, 110}));
  // A different case of the same source is no round of the first.
  Record other = measured("kestrel", 50, 1);
  other.params["model"] = "gpt_tiny";
  harness.add(other);
  EXPECT_EQ(harness.records().size(), 3u);
}

TEST(HarnessRounds, TheRoundsSurviveJson) {
  Record r = measured("kestrel", 82, 390);
  r.round_medians_ms = {80, 120, 82};
  EXPECT_EQ(record_from_json(to_json(r)).round_medians_ms, r.round_medians_ms);
  Json without = to_json(measured("torch", 110, 290));
  without.erase("round_medians_ms");  // as a peer that knows nothing of rounds prints it
  EXPECT_TRUE(record_from_json(without).round_medians_ms.empty());
}

}  // namespace
}  // namespace kestrel::bench
