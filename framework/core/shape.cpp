#include "framework/core/shape.h"

#include <algorithm>
#include <functional>

#include "framework/core/error.h"

namespace kestrel {

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxRank)) {
    throw ShapeError("shape of rank " + std::to_string(dims.size()) + " exceeds Kestrel's maximum rank " +
                     std::to_string(kMaxRank));
  }
  for (std::int64_t d : dims) {
    if (d < 0) throw ShapeError("shape dims must be >= 0, got " + std::to_string(d));
  }
  std::copy(dims.begin(), dims.end(), dims_.begin());
  rank_ = static_cast<int>(dims.size());
  check_numel();
}

void Shape::check_numel() const {
  // numel() must not overflow: every size computed from a shape would silently wrap.
  std::int64_t n = 1;
  bool overflow = false;
  for (int i = 0; i < rank_; ++i) {
    std::int64_t d = dims_[static_cast<std::size_t>(i)];
    if (d == 0) return;
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  if (overflow) throw ShapeError("shape " + to_string() + " has more than 2^63 elements");
}

std::int64_t Shape::numel() const {
  // Unsigned, so [2^32,2^32,0] gives 0 without overflowing on the way: check_numel() has ruled
  // out every other overflow.
  std::uint64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= static_cast<std::uint64_t>(dims_[static_cast<std::size_t>(i)]);
  return static_cast<std::int64_t>(n);
}

void Shape::push_back(std::int64_t dim) {
  if (rank_ == kMaxRank) throw ShapeError("shape exceeds Kestrel's maximum rank " + std::to_string(kMaxRank));
  if (dim < 0) throw ShapeError("shape dims must be >= 0, got " + std::to_string(dim));
  dims_[static_cast<std::size_t>(rank_++)] = dim;
  try {
    check_numel();
  } catch (...) {
    --rank_;
    throw;
  }
}

std::vector<std::int64_t> Shape::strides() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(rank_));
  std::int64_t stride = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = stride;
    stride *= dims_[static_cast<std::size_t>(i)];
  }
  return out;
}

std::string Shape::to_string() const { return dims_to_string(dims()); }

std::string dims_to_string(std::span<const std::int64_t> dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

bool operator==(const Shape& a, const Shape& b) {
  return a.rank_ == b.rank_ && std::equal(a.dims_.begin(), a.dims_.begin() + a.rank_, b.dims_.begin());
}

int normalize_axis(int axis, int rank, const char* op) {
  int normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= std::max(rank, 1)) {
    throw ShapeError(op_message(op, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                                        std::to_string(rank) + "; expected an axis in [" + std::to_string(-rank) +
                                        ", " + std::to_string(rank) + ")"));
  }
  return normalized;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i;
    int ib = b.rank() - rank + i;
    std::int64_t da = ia >= 0 ? a[ia] : 1;
    std::int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(op_message(op, "a is " + a.to_string() + ", b is " + b.to_string() +
                                          ": shapes do not broadcast (dim " + std::to_string(da) + " vs " +
                                          std::to_string(db) + "); each dim must match or be 1"));
    }
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

std::size_t hash_value(const Shape& shape) {
  std::size_t h = static_cast<std::size_t>(shape.rank());
  for (std::int64_t d : shape.dims()) h = h * 1000003u ^ std::hash<std::int64_t>{}(d);
  return h;
}

}  // namespace kestrel
