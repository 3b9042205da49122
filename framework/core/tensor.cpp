#include "framework/core/tensor.h"

#include <cstdint>
#include <sstream>

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
  T v = static_cast<T>(static_cast<float>(value));
  if constexpr (std::is_integral_v<T>) v = static_cast<T>(value);
  T* p = static_cast<T*>(data);
  for (std::int64_t i = 0; i < n; ++i) p[i] = v;
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->spec = {shape, dtype};
  impl->buffer = Buffer::allocate(static_cast<std::size_t>(shape.numel()) * size_of(dtype));
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  visit_dtype(dtype, [&](auto tag) { fill<decltype(tag)>(t.impl_->buffer->data(), t.numel(), value); });
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor Tensor::from_buffer(std::shared_ptr<Buffer> buffer, const Shape& shape, DType dtype) {
  std::size_t needed = static_cast<std::size_t>(shape.numel()) * size_of(dtype);
  if (!buffer || buffer->size() < needed) {
    throw ShapeError("Tensor::from_buffer: a " + std::string(kestrel::to_string(dtype)) + shape.to_string() +
                     " tensor needs " + std::to_string(needed) + " bytes, the buffer has " +
                     std::to_string(buffer ? buffer->size() : 0));
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

template <class T>
const T* Tensor::data() const {
  if (dtype_of<T>() != dtype()) {
    throw TypeError("Tensor::data: the tensor is " + spec().to_string() + ", not " +
                    std::string(kestrel::to_string(dtype_of<T>())));
  }
  return static_cast<const T*>(impl_->buffer->data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
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
  std::ostringstream out;
  out << spec().to_string() << " [";
  constexpr std::int64_t kShown = 16;
  std::vector<double> values = to_vector<double>();
  for (std::int64_t i = 0; i < numel() && i < kShown; ++i) out << (i ? ", " : "") << values[static_cast<std::size_t>(i)];
  if (numel() > kShown) out << ", ...";
  out << "]";
  return out.str();
}

#define KESTREL_INSTANTIATE(T)                                                       \
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
