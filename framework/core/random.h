// Seeded, counter-based random numbers (Philox-4x32-10).
//
//   random::Key key(42);
//   Tensor w = random::normal({784, 512}, key, /*mean=*/0, /*stddev=*/0.05);
//   Tensor u = random::uniform({8}, key.fold_in(1));   // an independent stream
//
// Element i of a result is a pure function of (key, i), so the numbers are the same at any
// thread count and in any order of evaluation.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "framework/core/tensor.h"

namespace kestrel::random {

class Key {
 public:
  explicit Key(std::uint64_t seed = 0)
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)} {}
  /// A new key derived from this one and `data`; distinct data give independent streams.
  Key fold_in(std::uint64_t data) const;
  /// Four random 32-bit words for the given counter.
  std::array<std::uint32_t, 4> bits(std::uint64_t counter_hi, std::uint64_t counter_lo) const;
  std::uint64_t as_uint64() const { return (static_cast<std::uint64_t>(key_[1]) << 32) | key_[0]; }
  friend bool operator==(const Key&, const Key&) = default;

 private:
  std::array<std::uint32_t, 2> key_;
};

/// Uniform float in [0, 1) for element `index` of the stream `key`.
float uniform_at(const Key& key, std::uint64_t index);
/// out[k] = uniform_at(key, first_index + k), four times faster than calling it per element.
void uniform_fill(const Key& key, std::uint64_t first_index, std::span<float> out);

/// Uniform in [minval, maxval).
Tensor uniform(const Shape& shape, const Key& key, double minval = 0.0, double maxval = 1.0,
               DType dtype = DType::float32);
/// Normal with the given mean and standard deviation (Box-Muller).
Tensor normal(const Shape& shape, const Key& key, double mean = 0.0, double stddev = 1.0, DType dtype = DType::float32);
/// Normal, redrawn until within two standard deviations (Keras's TruncatedNormal).
Tensor truncated_normal(const Shape& shape, const Key& key, double mean = 0.0, double stddev = 1.0,
                        DType dtype = DType::float32);
/// Uniform integers in [minval, maxval).
Tensor randint(const Shape& shape, const Key& key, std::int64_t minval, std::int64_t maxval,
               DType dtype = DType::int64);

/// Seeds the global key stream that weight initializers and layers draw from when no key is
/// given (keras.utils.set_random_seed): the same seed and construction order give the same weights.
void set_global_seed(std::uint64_t seed);
/// The next key of the global stream (thread-safe).
Key next_global_key();

/// Where the global stream is: its seed's key and how many keys have been drawn from it. A backup
/// of a run keeps it (callbacks::BackupAndRestore), so a resumed run draws the keys it would have.
struct GlobalStreamState {
  std::uint64_t base = 0;  ///< Key::as_uint64 of the seed's key
  std::uint64_t drawn = 0;
};
GlobalStreamState global_stream_state();
void restore_global_stream(const GlobalStreamState& state);

}  // namespace kestrel::random
