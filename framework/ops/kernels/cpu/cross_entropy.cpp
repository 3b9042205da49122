// Sparse softmax cross-entropy and its gradient, for every CPU level (the ops and their checks
// are framework/ops/primitives/cross_entropy.cpp; labels arrive checked).
#include "framework/ops/kernels/cpu/level.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "framework/core/thread_pool.h"

namespace kestrel::kernels::KESTREL_CPU_LEVEL {
namespace {

constexpr std::int64_t kGrainElements = 1 << 14;

template <class Label>
void cross_entropy_rows(const float* logits, const Label* labels, float* loss, std::int64_t rows, std::int64_t classes,
                        std::int64_t ignore_index) {
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / classes), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const auto label = static_cast<std::int64_t>(labels[r]);
      if (label == ignore_index) {
        loss[r] = 0.0f;
        continue;
      }
      Eigen::Map<const Eigen::ArrayXf> row(logits + r * classes, classes);
      const float m = row.maxCoeff();
      // logsumexp - logits[label], with both terms taken relative to the row max.
      loss[r] = std::log((row - m).exp().sum()) - (row[label] - m);
    }
  });
}

// d[r, :] = (softmax(logits[r, :]) - one_hot(label)) * dloss[r], or zero for an ignored row. Each
// value rounds as softmax, subtract and multiply would round it one op after another, so the
// fused gradient equals the unfused one bit for bit.
template <class Label>
void cross_entropy_backprop_rows(const float* logits, const Label* labels, const float* dloss, float* d,
                                 std::int64_t rows, std::int64_t classes, std::int64_t ignore_index) {
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / classes), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      Eigen::Map<Eigen::ArrayXf> out(d + r * classes, classes);
      const auto label = static_cast<std::int64_t>(labels[r]);
      if (label == ignore_index) {
        out.setZero();
        continue;
      }
      Eigen::Map<const Eigen::ArrayXf> row(logits + r * classes, classes);
      out = (row - row.maxCoeff()).exp();
      const float scale = 1.0f / out.sum();
      const float at_label = out[label];
      out = out * scale * dloss[r];
      out[label] = (at_label * scale - 1.0f) * dloss[r];
    }
  });
}

}  // namespace

void sparse_softmax_cross_entropy(const float* logits, const TensorView& labels, float* loss, std::int64_t classes,
                                  std::int64_t ignore_index) {
  if (labels.dtype == DType::int32) {
    cross_entropy_rows(logits, labels.as<std::int32_t>(), loss, labels.numel(), classes, ignore_index);
  } else {
    cross_entropy_rows(logits, labels.as<std::int64_t>(), loss, labels.numel(), classes, ignore_index);
  }
}

void sparse_softmax_cross_entropy_backprop(const float* logits, const TensorView& labels, const float* dloss, float* d,
                                           std::int64_t classes, std::int64_t ignore_index) {
  if (labels.dtype == DType::int32) {
    cross_entropy_backprop_rows(logits, labels.as<std::int32_t>(), dloss, d, labels.numel(), classes, ignore_index);
  } else {
    cross_entropy_backprop_rows(logits, labels.as<std::int64_t>(), dloss, d, labels.numel(), classes, ignore_index);
  }
}

}  // namespace kestrel::kernels::KESTREL_CPU_LEVEL
