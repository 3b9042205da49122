// Counter-based random numbers: determinism, thread independence, distributions, argument checks.
#include "framework/core/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel {
namespace {

using kestrel::testing::ThreadCountGuard;
using random::Key;

// Large enough that parallel_for (grain 2^14) splits it at 2 and 4 threads.
constexpr std::int64_t kLarge = 100'000;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.spec() == b.spec() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

struct Moments {
  double mean, stddev, min, max;
};

Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

// One generator per distribution, so the determinism tests cover them all.
std::vector<std::pair<std::string, Tensor (*)(const Shape&, const Key&)>> generators() {
  return {
      {"uniform", [](const Shape& s, const Key& k) { return random::uniform(s, k, -3.0, 5.0); }},
      {"uniform_bf16", [](const Shape& s, const Key& k) { return random::uniform(s, k, 0.0, 1.0, DType::bfloat16); }},
      {"normal", [](const Shape& s, const Key& k) { return random::normal(s, k, 1.0, 2.0); }},
      {"normal_bf16", [](const Shape& s, const Key& k) { return random::normal(s, k, 0.0, 1.0, DType::bfloat16); }},
      {"truncated_normal", [](const Shape& s, const Key& k) { return random::truncated_normal(s, k); }},
      {"randint", [](const Shape& s, const Key& k) { return random::randint(s, k, -50, 50); }},
      {"randint_int32", [](const Shape& s, const Key& k) { return random::randint(s, k, 0, 7, DType::int32); }},
  };
}

TEST(RandomKey, SeedSetsBothWords) {
  EXPECT_EQ(Key(42).as_uint64(), 42u);
  EXPECT_EQ(Key(0x1234567890abcdefull).as_uint64(), 0x1234567890abcdefull);
  EXPECT_EQ(Key().as_uint64(), 0u);
  EXPECT_EQ(Key(7), Key(7));
  EXPECT_FALSE(Key(7) == Key(8));
}

TEST(RandomKey, BitsArePureFunctionsOfKeyAndCounter) {
  Key k(3);
  EXPECT_EQ(k.bits(0, 5), k.bits(0, 5));
  EXPECT_NE(k.bits(0, 5), k.bits(0, 6));
  EXPECT_NE(k.bits(0, 5), k.bits(1, 5));
  EXPECT_NE(k.bits(0, 5), Key(4).bits(0, 5));
}

TEST(RandomKey, PhiloxMatchesTheReferenceVectors) {
  // Known-answer tests of Philox-4x32-10 from the Random123 distribution (kat_vectors);
  // Key(seed) holds the key words low first, bits(hi, lo) the counter words low first.
  struct Case {
    std::uint64_t seed, hi, lo;
    std::array<std::uint32_t, 4> want;
  };
  const Case cases[] = {
      {0, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {0xffffffffffffffffull,
       0xffffffffffffffffull,
       0xffffffffffffffffull,
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      // Counter words 243f6a88 85a308d3 13198a2e 03707344, key words a4093822 299f31d0 (low word first).
      {0x299f31d0a4093822ull,
       0x0370734413198a2eull,
       0x85a308d3243f6a88ull,
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Case& c : cases) EXPECT_EQ(Key(c.seed).bits(c.hi, c.lo), c.want) << "seed " << c.seed;
}

TEST(RandomKey, FoldInGivesDistinctKeys) {
  Key k(42);
  std::set<std::uint64_t> seen{k.as_uint64()};
  for (std::uint64_t d = 0; d < 1000; ++d) seen.insert(k.fold_in(d).as_uint64());
  EXPECT_EQ(seen.size(), 1001u);
  EXPECT_EQ(k.fold_in(5), k.fold_in(5));
  EXPECT_NE(Key(1).fold_in(5), Key(2).fold_in(5));
}

TEST(RandomKey, FoldInGivesDifferentStreams) {
  Key k(42);
  Tensor a = random::uniform({1000}, k.fold_in(1));
  Tensor b = random::uniform({1000}, k.fold_in(2));
  Tensor c = random::uniform({1000}, k);
  std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>(), vc = c.to_vector<float>();
  int equal_ab = 0, equal_ac = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    equal_ab += va[i] == vb[i];
    equal_ac += va[i] == vc[i];
  }
  EXPECT_LT(equal_ab, 5);
  EXPECT_LT(equal_ac, 5);
}

TEST(RandomDeterminism, SameKeyGivesIdenticalTensors) {
  for (const auto& [name, gen] : generators()) {
    Tensor a = gen({64, 33}, Key(123));
    Tensor b = gen({64, 33}, Key(123));
    EXPECT_FALSE(a.is_same(b));
    EXPECT_TRUE(same_bytes(a, b)) << name;
    Tensor c = gen({64, 33}, Key(124));
    EXPECT_FALSE(same_bytes(a, c)) << name << ": a different key should give different numbers";
  }
}

TEST(RandomDeterminism, ElementIDependsOnlyOnKeyAndI) {
  // A prefix of a larger draw equals a smaller draw, whatever the shape.
  std::vector<float> small = random::normal({10}, Key(9)).to_vector<float>();
  std::vector<float> large = random::normal({5, 40}, Key(9)).to_vector<float>();
  EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin()));
  EXPECT_EQ(random::uniform({1}, Key(9)).to_vector<float>()[0], random::uniform_at(Key(9), 0));
}

TEST(RandomDeterminism, BitwiseIdenticalAtOneTwoAndFourThreads) {
  ThreadCountGuard guard;
  for (const auto& [name, gen] : generators()) {
    set_num_threads(1);
    Tensor at1 = gen({kLarge}, Key(2024));
    set_num_threads(2);
    Tensor at2 = gen({kLarge}, Key(2024));
    set_num_threads(4);
    Tensor at4 = gen({kLarge}, Key(2024));
    EXPECT_TRUE(same_bytes(at1, at2)) << name << " at 1 vs 2 threads";
    EXPECT_TRUE(same_bytes(at1, at4)) << name << " at 1 vs 4 threads";
  }
}

TEST(RandomUniform, UnitIntervalSamples) {
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    float u = random::uniform_at(Key(5), i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
  }
}

TEST(RandomUniform, StaysInRangeWithTheExpectedMoments) {
  const double lo = -3.0, hi = 5.0;
  Tensor t = random::uniform({kLarge}, Key(1), lo, hi);
  EXPECT_EQ(t.dtype(), DType::float32);
  Moments m = moments(t);
  EXPECT_GE(m.min, lo);
  EXPECT_LT(m.max, hi);
  EXPECT_NEAR(m.mean, (lo + hi) / 2, 0.05);
  EXPECT_NEAR(m.stddev, (hi - lo) / std::sqrt(12.0), 0.05);
  // The samples fill the interval.
  EXPECT_LT(m.min, lo + 0.01);
  EXPECT_GT(m.max, hi - 0.01);
}

TEST(RandomUniform, BFloat16StaysBelowMaxval) {
  // Rounding to bfloat16 maps every float in (1 - 2^-9, 1) to 1.0: about one draw in 512.
  Tensor t = random::uniform({kLarge}, Key(2), 0.0, 1.0, DType::bfloat16);
  EXPECT_EQ(t.dtype(), DType::bfloat16);
  Moments m = moments(t);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  EXPECT_NEAR(m.mean, 0.5, 0.01);
  Tensor shifted = random::uniform({kLarge}, Key(3), -2.0, -1.0, DType::bfloat16);
  Moments ms = moments(shifted);
  EXPECT_GE(ms.min, -2.0);
  EXPECT_LT(ms.max, -1.0);
}

TEST(RandomUniform, Float32StaysBelowMaxvalWhenTheSumRoundsUp) {
  // For Key(16390493) the first unit sample is 1 - 2^-24, the largest there is; 1 + (1 - 2^-24)
  // rounds to 2.0 in float32, so without care uniform(1, 2) would return maxval.
  Key key(16390493);
  ASSERT_EQ(random::uniform_at(key, 0), 1.0f - 1.0f / 16777216.0f);
  float v = random::uniform({1}, key, 1.0, 2.0).to_vector<float>()[0];
  EXPECT_LT(v, 2.0f);
  EXPECT_EQ(v, std::nextafter(2.0f, 0.0f));
  float w = random::uniform({1}, key, -2.0, -1.0).to_vector<float>()[0];
  EXPECT_LT(w, -1.0f);
}

TEST(RandomUniform, BoundsThatAreNotRepresentableAreStillRespected) {
  // 0.3 is not a bfloat16; 0.30078125 (its nearest) lies above it and must not appear.
  Tensor t = random::uniform({kLarge}, Key(4), 0.1, 0.3, DType::bfloat16);
  Moments m = moments(t);
  EXPECT_GE(m.min, 0.1);
  EXPECT_LT(m.max, 0.3);
}

TEST(RandomUniform, RejectsBadArguments) {
  EXPECT_THROW(random::uniform({2}, Key(0), 1.0, 1.0), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), 2.0, 1.0), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), 0.0, std::nan("")), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), 0.0, INFINITY), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), -1e39, 0.0), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), -3e38, 3e38), ValueError);
  EXPECT_THROW(random::uniform({2}, Key(0), 0.0, 1.0, DType::int32), TypeError);
  EXPECT_THROW(random::uniform({2}, Key(0), 0.0, 1.0, DType::bool_), TypeError);
  // No bfloat16 lies in [1.001, 1.002): the neighbours are 1.0 and 1.0078125.
  EXPECT_THROW(random::uniform({2}, Key(0), 1.001, 1.002, DType::bfloat16), ValueError);
  try {
    random::uniform({2}, Key(0), 3.0, 1.0);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[random.uniform] ", 0), 0u) << e.what();
  }
}

TEST(RandomNormal, HasMeanZeroAndUnitStddev) {
  Moments m = moments(random::normal({kLarge}, Key(11)));
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  EXPECT_NEAR(m.stddev, 1.0, 0.02);
  EXPECT_LT(m.min, -3.0);
  EXPECT_GT(m.max, 3.0);
}

TEST(RandomNormal, ShiftsAndScales) {
  Moments m = moments(random::normal({kLarge}, Key(12), 5.0, 0.5));
  EXPECT_NEAR(m.mean, 5.0, 0.01);
  EXPECT_NEAR(m.stddev, 0.5, 0.01);
  Tensor h = random::normal({kLarge}, Key(12), 5.0, 0.5, DType::bfloat16);
  EXPECT_EQ(h.dtype(), DType::bfloat16);
  Moments mh = moments(h);
  EXPECT_NEAR(mh.mean, 5.0, 0.02);
  EXPECT_NEAR(mh.stddev, 0.5, 0.02);
}

TEST(RandomNormal, ZeroStddevGivesTheMean) {
  std::vector<float> v = random::normal({100}, Key(1), 2.5, 0.0).to_vector<float>();
  for (float x : v) EXPECT_EQ(x, 2.5f);
}

TEST(RandomNormal, AllValuesAreFinite) {
  for (float x : random::normal({kLarge}, Key(13)).to_vector<float>()) ASSERT_TRUE(std::isfinite(x));
}

TEST(RandomNormal, RejectsBadArguments) {
  EXPECT_THROW(random::normal({2}, Key(0), 0.0, -1.0), ValueError);
  EXPECT_THROW(random::normal({2}, Key(0), 0.0, std::nan("")), ValueError);
  EXPECT_THROW(random::normal({2}, Key(0), INFINITY, 1.0), ValueError);
  EXPECT_THROW(random::normal({2}, Key(0), 0.0, 1.0, DType::int64), TypeError);
  try {
    random::normal({2}, Key(0), 0.0, 1.0, DType::int32);
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("[random.normal] ", 0), 0u) << what;
    EXPECT_NE(what.find("int32"), std::string::npos) << what;
  }
}

TEST(RandomTruncatedNormal, StaysWithinTwoStddevs) {
  Moments m = moments(random::truncated_normal({kLarge}, Key(21)));
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 2.0);
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  // A standard normal truncated to [-2, 2] has stddev 0.8796.
  EXPECT_NEAR(m.stddev, 0.8796, 0.02);
  EXPECT_LT(m.min, -1.95);
  EXPECT_GT(m.max, 1.95);
}

TEST(RandomTruncatedNormal, StaysWithinTwoStddevsOfAShiftedMean) {
  Moments m = moments(random::truncated_normal({kLarge}, Key(22), 10.0, 0.25));
  EXPECT_GE(m.min, 9.5);
  EXPECT_LE(m.max, 10.5);
  EXPECT_NEAR(m.mean, 10.0, 0.01);
  Moments mh = moments(random::truncated_normal({kLarge}, Key(22), 0.0, 1.0, DType::bfloat16));
  EXPECT_GE(mh.min, -2.0);
  EXPECT_LE(mh.max, 2.0);
}

TEST(RandomTruncatedNormal, RejectsBadArguments) {
  EXPECT_THROW(random::truncated_normal({2}, Key(0), 0.0, -0.5), ValueError);
  EXPECT_THROW(random::truncated_normal({2}, Key(0), 0.0, 1.0, DType::bool_), TypeError);
}

TEST(RandomRandint, CoversTheRangeUniformly) {
  Tensor t = random::randint({kLarge}, Key(31), -3, 7);
  EXPECT_EQ(t.dtype(), DType::int64);
  std::vector<std::int64_t> v = t.to_vector<std::int64_t>();
  std::vector<int> counts(10, 0);
  for (std::int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 7);
    ++counts[static_cast<std::size_t>(x + 3)];
  }
  for (int c : counts) EXPECT_NEAR(c, kLarge / 10, kLarge / 100) << "every value should be about equally likely";
}

TEST(RandomRandint, Int32AndASingleValueRange) {
  Tensor t = random::randint({1000}, Key(32), 5, 6, DType::int32);
  EXPECT_EQ(t.dtype(), DType::int32);
  for (std::int32_t x : t.to_vector<std::int32_t>()) EXPECT_EQ(x, 5);
}

TEST(RandomRandint, Int32AcceptsItsFullRange) {
  std::int64_t lo = std::numeric_limits<std::int32_t>::min();
  std::int64_t hi = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
  for (std::int32_t x : random::randint({1000}, Key(33), lo, hi, DType::int32).to_vector<std::int32_t>()) {
    EXPECT_GE(x, lo);
  }
}

TEST(RandomRandint, HandlesRangesWiderThanInt64) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> v = random::randint({1000}, Key(34), lo, hi).to_vector<std::int64_t>();
  int negative = 0;
  for (std::int64_t x : v) {
    EXPECT_LT(x, hi);
    negative += x < 0;
  }
  EXPECT_GT(negative, 400);
  EXPECT_LT(negative, 600);
}

TEST(RandomRandint, RejectsBadArguments) {
  EXPECT_THROW(random::randint({2}, Key(0), 5, 5), ValueError);
  EXPECT_THROW(random::randint({2}, Key(0), 5, 4), ValueError);
  EXPECT_THROW(random::randint({2}, Key(0), 0, 10, DType::float32), TypeError);
  EXPECT_THROW(random::randint({2}, Key(0), 0, 10, DType::bool_), TypeError);
  // The range would not fit the output dtype.
  EXPECT_THROW(random::randint({2}, Key(0), 0, std::int64_t{1} << 40, DType::int32), ValueError);
  EXPECT_THROW(random::randint({2}, Key(0), -(std::int64_t{1} << 40), 0, DType::int32), ValueError);
  try {
    random::randint({2}, Key(0), 9, 3);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[random.randint] ", 0), 0u) << e.what();
  }
}

TEST(RandomShapes, ScalarAndEmptyShapes) {
  EXPECT_EQ(random::uniform({}, Key(1)).rank(), 0);
  EXPECT_EQ(random::normal({0, 5}, Key(1)).numel(), 0);
  EXPECT_EQ(random::randint({3, 0}, Key(1), 0, 2).numel(), 0);
  EXPECT_EQ(random::truncated_normal({2, 3, 4}, Key(1)).shape(), (Shape{2, 3, 4}));
}

}  // namespace
}  // namespace kestrel
