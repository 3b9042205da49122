// Static tensor shapes.
//
//   Shape s{32, 784};
//   s.rank();        // 2
//   s.numel();       // 25088
//   s[-1];           // 784 (negative indices count from the end)
//   s.to_string();   // "[32,784]"
//
// Dims live inline (no heap), so shapes are cheap to copy into kernels and cache keys.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace kestrel {

class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims) : Shape(std::span<const std::int64_t>(dims)) {}

  int rank() const { return rank_; }
  /// Product of the dims; 1 for a scalar.
  std::int64_t numel() const;
  /// Dim i; a negative i counts from the end, as in Python.
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i < 0 ? i + rank_ : i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i < 0 ? i + rank_ : i)]; }
  std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
  std::vector<std::int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }

  void push_back(std::int64_t dim);
  /// Row-major strides in elements.
  std::vector<std::int64_t> strides() const;
  /// "[32,784]"; "[]" for a scalar.
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  void check_numel() const;

  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

/// Normalizes a possibly negative axis for a tensor of the given rank; throws ShapeError naming op.
int normalize_axis(int axis, int rank, const char* op);

/// NumPy broadcasting of two shapes; throws ShapeError naming op when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

std::size_t hash_value(const Shape& shape);

/// "[2,-1,3]": dims that need not form a valid Shape (requested shapes, slice bounds), for messages.
std::string dims_to_string(std::span<const std::int64_t> dims);

}  // namespace kestrel
