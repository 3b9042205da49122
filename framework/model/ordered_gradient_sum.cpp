#include "framework/model/ordered_gradient_sum.h"

#include <string>
#include <utility>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/ops/elementwise.h"

namespace kestrel::detail {

void OrderedGradientSum::add(int replica, std::vector<Tensor> gradients) {
  std::unique_lock<std::mutex> lock(mutex_);
  turn_.wait(lock, [&] { return next_ == replica || abandoned_; });
  if (abandoned_) return;
  autodiff::NoGradScope no_grad;
  if (replica == 0) {
    // bfloat16 gradients are summed in float32 and rounded once, in take(), as the all-reduce does.
    for (Tensor& g : gradients) {
      dtypes_.push_back(g.defined() ? g.dtype() : DType::float32);
      if (g.defined() && g.dtype() == DType::bfloat16) g = ops::cast(g, DType::float32);
    }
    total_ = std::move(gradients);
  } else {
    if (gradients.size() != total_.size()) {
      throw ValueError("replica " + std::to_string(replica) + " has " + std::to_string(gradients.size()) +
                       " gradients but replica 0 has " + std::to_string(total_.size()));
    }
    for (std::size_t k = 0; k < total_.size(); ++k) {
      if (total_[k].defined() != gradients[k].defined()) {
        throw ValueError("gradient " + std::to_string(k) + " reached its weight in one replica but not in another");
      }
      if (total_[k].defined()) total_[k] = ops::add(total_[k], ops::cast(gradients[k], total_[k].dtype()));
    }
  }
  ++next_;
  turn_.notify_all();
}

void OrderedGradientSum::abandon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
  }
  turn_.notify_all();
}

std::vector<Tensor> OrderedGradientSum::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (next_ != replicas_) {
    throw ValueError("OrderedGradientSum: " + std::to_string(next_) + " of " + std::to_string(replicas_) +
                     " replicas added their gradients");
  }
  autodiff::NoGradScope no_grad;
  for (std::size_t k = 0; k < total_.size(); ++k) {
    if (total_[k].defined() && total_[k].dtype() != dtypes_[k]) total_[k] = ops::cast(total_[k], dtypes_[k]);
  }
  return std::move(total_);
}

}  // namespace kestrel::detail
