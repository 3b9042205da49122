#include "framework/core/tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <ostream>
#include <sstream>
#include <type_traits>

#include "framework/core/error.h"

namespace kestrel {

std::string TensorSpec::to_string() const { return std::string(kestrel::to_string(dtype)) + shape.to_string(); }

namespace {

template <class T, class Fn>
void for_each_element(const Tensor& t, Fn&& fn) {
  const T* p = t.data<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) fn(p[i]);
}

template <class T>
void fill(void* data, std::int64_t n, double value) {
  T v;
  if constexpr (std::is_same_v<T, bool>) {
    v = value != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(value);  // full() has checked that value fits
  } else {
    v = static_cast<T>(static_cast<float>(value));
  }
  T* p = static_cast<T*>(data);
  for (std::int64_t i = 0; i < n; ++i) p[i] = v;
}

// True when value truncates to a T; converting anything else (NaN, inf, out of range) is undefined.
template <class T>
bool fits_integer(double value) {
  double lowest = static_cast<double>(std::numeric_limits<T>::min());  // -2^31 or -2^63, exact
  double t = std::trunc(value);
  return t >= lowest && t < -lowest;
}

// Prints values[offset...] nested by dims from `dim` on, stopping after `limit` numbers.
template <class V>
void print_nested(std::ostream& out, const std::vector<V>& values, const Shape& shape,
                  const std::vector<std::int64_t>& strides, int dim, std::int64_t offset, std::int64_t limit,
                  std::int64_t& printed) {
  out << '[';
  for (std::int64_t i = 0; i < shape[dim]; ++i) {
    if (i) out << ", ";
    if (printed >= limit) {
      out << "...";
      break;
    }
    std::int64_t at = offset + i * strides[static_cast<std::size_t>(dim)];
    if (dim == shape.rank() - 1) {
      out << values[static_cast<std::size_t>(at)];
      ++printed;
    } else {
      print_nested(out, values, shape, strides, dim + 1, at, limit, printed);
    }
  }
  out << ']';
}

// Bytes for a tensor of this spec, or false when that does not fit in a size_t.
bool bytes_needed(const Shape& shape, DType dtype, std::size_t& bytes) {
  return !__builtin_mul_overflow(static_cast<std::size_t>(shape.numel()), size_of(dtype), &bytes);
}

}  // namespace

Tensor Tensor::empty_or_reused(Tensor&& reused, const Shape& shape, DType dtype) {
  Tensor candidate = std::move(reused);
  if (!candidate.is_sole_owner() || candidate.is_symbolic()) return empty(shape, dtype);
  if (candidate.shape() == shape && candidate.dtype() == dtype) return candidate;
  std::size_t bytes = 0;
  if (bytes_needed(shape, dtype, bytes) && candidate.buffer()->size() == bytes) {
    return from_buffer(candidate.buffer(), shape, dtype);
  }
  return empty(shape, dtype);
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->spec = {shape, dtype};
  std::size_t bytes;
  if (!bytes_needed(shape, dtype, bytes)) throw std::bad_alloc();
  impl->buffer = Buffer::allocate(bytes);
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  bool fits = true;
  if (dtype == DType::int32) fits = fits_integer<std::int32_t>(value);
  if (dtype == DType::int64) fits = fits_integer<std::int64_t>(value);
  if (!fits) {
    throw ValueError("Tensor::full: " + std::to_string(value) + " does not fit in " +
                     std::string(kestrel::to_string(dtype)));
  }
  Tensor t = empty(shape, dtype);
  visit_dtype(dtype, [&](auto tag) { fill<decltype(tag)>(t.impl_->buffer->data(), t.numel(), value); });
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor Tensor::from_buffer(std::shared_ptr<Buffer> buffer, const Shape& shape, DType dtype) {
  std::size_t needed = 0;
  bool fits = bytes_needed(shape, dtype, needed);
  if (!buffer || !fits || buffer->size() < needed) {
    throw ShapeError("Tensor::from_buffer: a " + std::string(kestrel::to_string(dtype)) + shape.to_string() +
                     " tensor needs " + (fits ? std::to_string(needed) : std::string("more than 2^64")) +
                     " bytes, the buffer has " + std::to_string(buffer ? buffer->size() : 0));
  }
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->spec = {shape, dtype};
  impl->buffer = std::move(buffer);
  return Tensor(std::move(impl));
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw ShapeError("Tensor::from_vector: " + std::to_string(values.size()) + " values do not fill shape " +
                     shape.to_string() + " (" + std::to_string(shape.numel()) + " elements)");
  }
  Tensor t = empty(shape, dtype_of<T>());
  T* out = static_cast<T*>(t.impl_->buffer->data());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

void Tensor::throw_symbolic_read(const char* reader) const {
  throw JitError("rule 1 (no data-dependent control flow): Tensor::" + std::string(reader) + " reads the value of " +
                 impl_->symbolic->origin +
                 " while jit_compile traces the step, and a traced tensor has no value "
                 "until the compiled step runs. Keep the decision inside the program: ops::where(condition, a, b), or "
                 "multiply by a mask, instead of branching or reading values in C++ (or compile with "
                 "{.jit_compile = false} to debug eagerly)");
}

template <class T>
const T* Tensor::data() const {
  require_value("data()");
  if (dtype_of<T>() != dtype()) {
    throw TypeError("Tensor::data: the tensor is " + spec().to_string() + ", not " +
                    std::string(kestrel::to_string(dtype_of<T>())));
  }
  return static_cast<const T*>(impl_->buffer->data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  require_value(std::is_same_v<T, double> ? "item() / to_vector()" : "to_vector()");
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(numel()));
  visit_dtype(dtype(), [&](auto tag) {
    using Src = decltype(tag);
    for_each_element<Src>(*this, [&](Src v) {
      if constexpr (std::is_same_v<Src, bfloat16>) {
        out.push_back(static_cast<T>(static_cast<float>(v)));
      } else if constexpr (std::is_same_v<T, bfloat16>) {
        out.push_back(T(static_cast<float>(v)));
      } else {
        out.push_back(static_cast<T>(v));
      }
    });
  });
  return out;
}

double Tensor::item() const {
  if (numel() != 1) {
    throw ShapeError("Tensor::item: the tensor is " + spec().to_string() +
                     "; item() needs exactly one element (reduce it first, e.g. ops::sum)");
  }
  return to_vector<double>()[0];
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  if (is_symbolic()) return spec().to_string() + " <traced: " + impl_->symbolic->origin + ">";
  constexpr std::int64_t kShown = 16;
  std::ostringstream out;
  out << spec().to_string() << ' ';
  // Integers print through int64, so large values are not shown in exponent notation.
  auto print = [&](const auto& values) {
    if (rank() == 0) {
      out << values[0];
      return;
    }
    std::int64_t printed = 0;
    print_nested(out, values, shape(), shape().strides(), 0, 0, kShown, printed);
  };
  if (is_floating(dtype())) {
    print(to_vector<double>());
  } else {
    print(to_vector<std::int64_t>());
  }
  return out.str();
}

#define KESTREL_INSTANTIATE(T)                                                 \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&); \
  template const T* Tensor::data<T>() const;                                   \
  template std::vector<T> Tensor::to_vector<T>() const;
KESTREL_INSTANTIATE(float)
KESTREL_INSTANTIATE(bfloat16)
KESTREL_INSTANTIATE(std::int32_t)
KESTREL_INSTANTIATE(std::int64_t)
KESTREL_INSTANTIATE(bool)
#undef KESTREL_INSTANTIATE
template std::vector<double> Tensor::to_vector<double>() const;

}  // namespace kestrel
