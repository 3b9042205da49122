#include "models/lm_head.h"

#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/matmul.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::models {

LMHead::LMHead(std::int64_t vocab_size, LMHeadOptions options)
    : Layer("LMHead", options.name, options.dtype), vocab_size_(vocab_size), options_(std::move(options)) {
  if (vocab_size_ <= 0) {
    throw ValueError(error_prefix() + "vocab_size is " + std::to_string(vocab_size_) + "; it must be positive");
  }
}

void LMHead::build(const Shape& input_shape) {
  if (input_shape.rank() < 2) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() + "; LMHead takes [..., hidden]");
  }
  kernel_ = add_weight("kernel", {vocab_size_, input_shape[-1]}, options_.kernel_initializer);
}

Tensor LMHead::call(const Tensor& h, bool training) {
  const std::int64_t hidden = kernel_.shape()[1];
  if (h.rank() < 2 || h.shape()[-1] != hidden) {
    throw ShapeError(error_prefix() + "input is " + h.shape().to_string() + " but the layer was built for " +
                     std::to_string(hidden) + " features; feed [..., " + std::to_string(hidden) + "]");
  }
  // One [rows, hidden] x [hidden, vocab] product: the kernel's gradient is a single matmul rather
  // than a batched one summed over the batch.
  std::vector<std::int64_t> out_shape = h.shape().to_vector();
  out_shape.back() = vocab_size_;
  Tensor flat = ops::reshape(h, {h.numel() / hidden, hidden});
  return ops::reshape(ops::matmul(flat, kernel_.value(), {.transpose_b = true}), out_shape);
}

}  // namespace kestrel::models
