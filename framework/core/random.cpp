#include "framework/core/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/philox.h"
#include "framework/core/thread_pool.h"

namespace kestrel::random {
namespace {

float to_unit_float(std::uint32_t bits) {
  // 24 random mantissa bits give every float in [0, 1) with spacing 2^-24.
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

template <class Fn>
Tensor generate(const Shape& shape, DType dtype, const char* name, Fn&& value_at) {
  if (!is_floating(dtype)) {
    throw TypeError(op_message(name, "dtype must be float32 or bfloat16, got " + std::string(to_string(dtype))));
  }
  Tensor out = Tensor::empty(shape, dtype);
  void* data = out.view().data;
  parallel_for(out.numel(), 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      float v = value_at(static_cast<std::uint64_t>(i));
      if (dtype == DType::float32) {
        static_cast<float*>(data)[i] = v;
      } else {
        static_cast<bfloat16*>(data)[i] = bfloat16(v);
      }
    }
  });
  return out;
}

// The value next to v (v representable in dtype) toward +inf (up) or -inf.
float step(float v, DType dtype, bool up) {
  if (dtype == DType::float32) {
    return std::nextafter(v, up ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity());
  }
  std::uint16_t b = bfloat16(v).bits;
  if ((b & 0x7fffu) == 0) return bfloat16::from_bits(up ? 0x0001u : 0x8001u);
  bool negative = (b & 0x8000u) != 0;
  return bfloat16::from_bits(static_cast<std::uint16_t>(up != negative ? b + 1 : b - 1));
}

float round_to(float v, DType dtype) { return dtype == DType::bfloat16 ? static_cast<float>(bfloat16(v)) : v; }

// The largest value of dtype below maxval and the smallest at or above minval: rounding
// lo + scale * u to the output dtype can otherwise land on maxval itself (for bfloat16 in
// [0, 1), one draw in 512 would).
std::pair<float, float> representable_range(double minval, double maxval, DType dtype) {
  float top = round_to(static_cast<float>(maxval), dtype);
  while (static_cast<double>(top) >= maxval) top = step(top, dtype, false);
  float bottom = round_to(static_cast<float>(minval), dtype);
  while (static_cast<double>(bottom) < minval) bottom = step(bottom, dtype, true);
  return {bottom, top};
}

void check_normal_args(const char* op, double mean, double stddev) {
  if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0) {
    throw ValueError(op_message(op, "mean (" + std::to_string(mean) + ") must be finite and stddev (" +
                                        std::to_string(stddev) + ") finite and >= 0"));
  }
}

float normal_at(const Key& key, std::uint64_t index, std::uint64_t attempt) {
  auto bits = key.bits(attempt, index);
  // 1 - u keeps the logarithm's argument in (0, 1].
  float u1 = 1.0f - to_unit_float(bits[0]);
  float u2 = to_unit_float(bits[1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
}

}  // namespace

Key Key::fold_in(std::uint64_t data) const {
  auto b = bits(0xFFFFFFFFFFFFFFFFull, data);
  Key out;
  out.key_ = {b[0], b[1]};
  return out;
}

std::array<std::uint32_t, 4> Key::bits(std::uint64_t counter_hi, std::uint64_t counter_lo) const {
  return philox::block({static_cast<std::uint32_t>(counter_lo), static_cast<std::uint32_t>(counter_lo >> 32),
                        static_cast<std::uint32_t>(counter_hi), static_cast<std::uint32_t>(counter_hi >> 32)},
                       key_);
}

// One Philox call yields four words: element i takes word i % 4 of counter i / 4.
float uniform_at(const Key& key, std::uint64_t index) {
  return to_unit_float(key.bits(0, index / 4)[static_cast<std::size_t>(index % 4)]);
}

void uniform_fill(const Key& key, std::uint64_t first_index, std::span<float> out) {
  std::uint64_t index = first_index;
  std::size_t i = 0;
  while (i < out.size()) {
    auto words = key.bits(0, index / 4);
    for (std::size_t w = index % 4; w < 4 && i < out.size(); ++w, ++i, ++index) out[i] = to_unit_float(words[w]);
  }
}

Tensor uniform(const Shape& shape, const Key& key, double minval, double maxval, DType dtype) {
  if (!(maxval > minval)) {
    throw ValueError("[random.uniform] maxval (" + std::to_string(maxval) + ") must exceed minval (" +
                     std::to_string(minval) + ")");
  }
  float lo = static_cast<float>(minval), scale = static_cast<float>(maxval - minval);
  if (!std::isfinite(lo) || !std::isfinite(static_cast<float>(maxval)) || !std::isfinite(scale)) {
    throw ValueError("[random.uniform] minval (" + std::to_string(minval) + ") and maxval (" + std::to_string(maxval) +
                     ") must be finite float32 values");
  }
  if (!is_floating(dtype)) {
    throw TypeError("[random.uniform] dtype must be float32 or bfloat16, got " + std::string(to_string(dtype)));
  }
  // Plain variables rather than a structured binding, which the lambda below captures: clang
  // before 16 rejects capturing structured bindings.
  const std::pair<float, float> range = representable_range(minval, maxval, dtype);
  const float bottom = range.first;
  const float top = range.second;
  if (bottom > top) {
    throw ValueError("[random.uniform] no " + std::string(to_string(dtype)) + " value lies in [" +
                     std::to_string(minval) + ", " + std::to_string(maxval) + ")");
  }
  Tensor out = Tensor::empty(shape, dtype);
  void* data = out.view().data;
  parallel_for(out.numel(), 1 << 14, [&](std::int64_t begin, std::int64_t end) {
    constexpr std::int64_t kBlock = 256;
    float block[kBlock];
    for (std::int64_t b = begin; b < end; b += kBlock) {
      std::int64_t n = std::min(kBlock, end - b);
      uniform_fill(key, static_cast<std::uint64_t>(b), std::span<float>(block, static_cast<std::size_t>(n)));
      for (std::int64_t k = 0; k < n; ++k) {
        float v = std::clamp(lo + scale * block[k], bottom, top);
        if (dtype == DType::float32) {
          static_cast<float*>(data)[b + k] = v;
        } else {
          static_cast<bfloat16*>(data)[b + k] = bfloat16(v);
        }
      }
    }
  });
  return out;
}

Tensor normal(const Shape& shape, const Key& key, double mean, double stddev, DType dtype) {
  check_normal_args("random.normal", mean, stddev);
  float m = static_cast<float>(mean), s = static_cast<float>(stddev);
  return generate(shape, dtype, "random.normal", [&](std::uint64_t i) { return m + s * normal_at(key, i, 0); });
}

Tensor truncated_normal(const Shape& shape, const Key& key, double mean, double stddev, DType dtype) {
  check_normal_args("random.truncated_normal", mean, stddev);
  float m = static_cast<float>(mean), s = static_cast<float>(stddev);
  return generate(shape, dtype, "random.truncated_normal", [&](std::uint64_t i) {
    // Each redraw uses a fresh counter, so the result still depends only on (key, i).
    for (std::uint64_t attempt = 0;; ++attempt) {
      float z = normal_at(key, i, attempt);
      if (std::fabs(z) <= 2.0f) return m + s * z;
    }
  });
}

Tensor randint(const Shape& shape, const Key& key, std::int64_t minval, std::int64_t maxval, DType dtype) {
  if (!is_integer(dtype)) {
    throw TypeError("[random.randint] dtype must be int32 or int64, got " + std::string(to_string(dtype)));
  }
  if (maxval <= minval) {
    throw ValueError("[random.randint] maxval (" + std::to_string(maxval) + ") must exceed minval (" +
                     std::to_string(minval) + ")");
  }
  if (dtype == DType::int32 &&
      (minval < std::numeric_limits<std::int32_t>::min() || maxval - 1 > std::numeric_limits<std::int32_t>::max())) {
    throw ValueError("[random.randint] the range [" + std::to_string(minval) + ", " + std::to_string(maxval) +
                     ") does not fit in int32; use dtype int64");
  }
  Tensor out = Tensor::empty(shape, dtype);
  // Unsigned arithmetic: maxval - minval can exceed the int64 range.
  std::uint64_t range = static_cast<std::uint64_t>(maxval) - static_cast<std::uint64_t>(minval);
  void* data = out.view().data;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    auto b = key.bits(0, static_cast<std::uint64_t>(i));
    std::uint64_t wide = (static_cast<std::uint64_t>(b[1]) << 32) | b[0];
    auto v = static_cast<std::int64_t>(static_cast<std::uint64_t>(minval) + wide % range);
    if (dtype == DType::int32) {
      static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v);
    } else {
      static_cast<std::int64_t*>(data)[i] = v;
    }
  }
  return out;
}

namespace {
struct GlobalStream {
  std::mutex mutex;
  Key base{0};
  std::uint64_t drawn = 0;
};
GlobalStream& global_stream() {
  static GlobalStream stream;
  return stream;
}
}  // namespace

void set_global_seed(std::uint64_t seed) {
  GlobalStream& s = global_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.base = Key(seed);
  s.drawn = 0;
}

Key next_global_key() {
  GlobalStream& s = global_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.base.fold_in(s.drawn++);
}

GlobalStreamState global_stream_state() {
  GlobalStream& s = global_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  return {.base = s.base.as_uint64(), .drawn = s.drawn};
}

void restore_global_stream(const GlobalStreamState& state) {
  GlobalStream& s = global_stream();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.base = Key(state.base);
  s.drawn = state.drawn;
}

}  // namespace kestrel::random
