#include "framework/model/array_batches.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::detail {
ArrayBatches::ArrayBatches(Inputs x, Outputs y, Tensor sample_weight, std::int64_t batch_size)
    : x_(std::move(x)), y_(std::move(y)), sample_weight_(std::move(sample_weight)), batch_size_(batch_size) {
  if (batch_size_ < 1) throw ValueError("batch_size must be >= 1, got " + std::to_string(batch_size_));
  num_samples_ = x_.batch_size();
  auto check = [&](const Tensor& t, const char* what) {
    if (t.defined() && (t.rank() == 0 || t.shape()[0] != num_samples_)) {
      throw ShapeError(std::string(what) + " has shape " + t.shape().to_string() + " but x has " +
                       std::to_string(num_samples_) + " samples; both need the same leading dim");
    }
  };
  if (y_.is_named()) {
    for (const auto& [name, t] : y_.named()) check(t, ("y['" + name + "']").c_str());
  } else {
    check(y_.tensor(), "y");
  }
  check(sample_weight_, "sample_weight");
}

std::int64_t ArrayBatches::num_batches() const { return (num_samples_ + batch_size_ - 1) / batch_size_; }

Batch ArrayBatches::batch(std::int64_t b) const {
  const std::int64_t begin = b * batch_size_;
  const std::int64_t end = std::min(begin + batch_size_, num_samples_);
  if (order_.empty()) return {x_.rows(begin, end), y_.rows(begin, end), ops::slice_rows(sample_weight_, begin, end)};
  std::vector<std::int64_t> picked(order_.begin() + begin, order_.begin() + end);
  Tensor indices = Tensor::from_vector(picked, {end - begin});
  return {x_.take(indices), y_.take(indices),
          sample_weight_.defined() ? ops::gather(sample_weight_, indices) : Tensor()};
}

void ArrayBatches::shuffle(const random::Key& key) {
  // Sorting indices by uniform draws gives a permutation that depends only on the key.
  std::vector<float> draws(static_cast<std::size_t>(num_samples_));
  random::uniform_fill(key, 0, draws);
  order_.resize(static_cast<std::size_t>(num_samples_));
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](std::int64_t a, std::int64_t b) {
    return draws[static_cast<std::size_t>(a)] < draws[static_cast<std::size_t>(b)];
  });
}

ArrayBatches ArrayBatches::split_tail(double fraction) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    throw ValueError("validation_split must be in (0, 1), got " + std::to_string(fraction));
  }
  const auto kept = static_cast<std::int64_t>(std::floor(static_cast<double>(num_samples_) * (1.0 - fraction)));
  if (kept == 0 || kept == num_samples_) {
    throw ValueError("validation_split " + std::to_string(fraction) + " of " + std::to_string(num_samples_) +
                     " samples leaves one side empty");
  }
  ArrayBatches tail(x_.rows(kept, num_samples_), y_.rows(kept, num_samples_),
                    ops::slice_rows(sample_weight_, kept, num_samples_), batch_size_);
  x_ = x_.rows(0, kept);
  y_ = y_.rows(0, kept);
  sample_weight_ = ops::slice_rows(sample_weight_, 0, kept);
  num_samples_ = kept;
  order_.clear();
  return tail;
}

}  // namespace kestrel::detail
