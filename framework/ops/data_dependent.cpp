#include "framework/ops/data_dependent.h"

#include <algorithm>
#include <set>

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

// Rule 2: the size of the result would come from the data, which a traced step does not have.
void require_eager(const Tensor& t, const char* op) {
  if (!t.is_symbolic()) return;
  throw JitError(std::string("rule 2 (static shapes): ops::") + op + " on " + t.symbolic()->origin +
                 " makes an output whose shape depends on the data, and a compiled program fixes every shape "
                 "before it sees data. Keep the full shape and weigh by a mask instead, e.g. "
                 "mask = cast(labels != -100, float32); loss = sum(losses * mask) / sum(mask)");
}

}  // namespace

Tensor boolean_mask(const Tensor& x, const Tensor& mask) {
  require_eager(x, "boolean_mask");
  require_eager(mask, "boolean_mask");
  if (mask.rank() != 1 || x.rank() < 1 || mask.shape()[0] != x.shape()[0]) {
    throw ShapeError(op_message("boolean_mask", "mask is " + mask.shape().to_string() + " but x is " +
                                                    x.shape().to_string() + "; the mask needs shape [" +
                                                    (x.rank() > 0 ? std::to_string(x.shape()[0]) : "n") + "]"));
  }
  if (mask.dtype() != DType::bool_) {
    throw TypeError(
        op_message("boolean_mask", "mask is " + mask.spec().to_string() + "; it must be bool (a comparison)"));
  }
  std::vector<std::int64_t> rows;
  const std::vector<std::int64_t> keep = mask.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] != 0) rows.push_back(static_cast<std::int64_t>(i));
  }
  return gather(x, Tensor::from_vector(rows, {static_cast<std::int64_t>(rows.size())}), 0);
}

Tensor unique(const Tensor& x) {
  require_eager(x, "unique");
  if (x.rank() != 1) throw ShapeError(op_message("unique", "x is " + x.shape().to_string() + "; it must be 1-D"));
  const std::vector<double> values = x.to_vector<double>();
  std::vector<std::int64_t> first_index;
  std::set<double> seen;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (seen.insert(values[i]).second) first_index.push_back(static_cast<std::int64_t>(i));
  }
  return gather(x, Tensor::from_vector(first_index, {static_cast<std::int64_t>(first_index.size())}), 0);
}

Tensor nonzero(const Tensor& x) {
  require_eager(x, "nonzero");
  const std::vector<double> values = x.to_vector<double>();
  const std::vector<std::int64_t> strides = x.shape().strides();
  std::vector<std::int64_t> out;
  std::int64_t count = 0;
  for (std::size_t flat = 0; flat < values.size(); ++flat) {
    if (values[flat] == 0.0) continue;
    auto rest = static_cast<std::int64_t>(flat);
    for (std::int64_t stride : strides) {
      out.push_back(rest / stride);
      rest %= stride;
    }
    ++count;
  }
  return Tensor::from_vector(out, {count, static_cast<std::int64_t>(x.rank())});
}

}  // namespace kestrel::ops
