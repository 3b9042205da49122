// Dataset sources: in-memory slices, generators and ranges (files: file_sources.cpp).
#include <cstring>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

// Row i of a value whose first dimension is the sample dimension.
Value slice_row(const Value& value, std::int64_t i) {
  if (const auto* s = std::get_if<Strings>(&value)) {
    std::vector<std::int64_t> row_shape(s->shape().dims().begin() + 1, s->shape().dims().end());
    const Shape shape(row_shape);
    const std::int64_t n = shape.numel();
    auto begin = s->values().begin() + i * n;
    return Strings(std::vector<std::string>(begin, begin + n), shape);
  }
  const Tensor& t = std::get<Tensor>(value);
  std::vector<std::int64_t> row_shape(t.shape().dims().begin() + 1, t.shape().dims().end());
  Tensor row = Tensor::empty(Shape(row_shape), t.dtype());
  const std::size_t bytes = row.nbytes();
  std::memcpy(row.view().data, static_cast<const char*>(t.raw_data()) + static_cast<std::size_t>(i) * bytes, bytes);
  return row;
}

class TensorSlicesNode final : public detail::DatasetNode {
 public:
  explicit TensorSlicesNode(Element values) : values_(std::move(values)) {
    if (values_.values().empty()) throw ValueError("from_tensor_slices: the element has no values to slice");
    for (const auto& [key, value] : values_.values()) {
      const auto* tensor = std::get_if<Tensor>(&value);
      if (tensor != nullptr && !tensor->defined()) {
        throw ValueError("from_tensor_slices: '" + key + "' is an undefined tensor; give it a value");
      }
      ValueSpec spec = spec_of(value);
      if (spec.shape.empty()) {
        throw ShapeError("from_tensor_slices: '" + key + "' is a scalar (" + spec.to_string() +
                         "); every value needs a first dimension to slice along");
      }
      if (size_ < 0) size_ = spec.shape[0];
      if (spec.shape[0] != size_) {
        throw ShapeError("from_tensor_slices: '" + key + "' has " + std::to_string(spec.shape[0]) + " rows but '" +
                         values_.keys().front() + "' has " + std::to_string(size_) +
                         "; every value must have the same first dimension");
      }
    }
  }
  std::string name() const override { return "from_tensor_slices"; }
  std::int64_t cardinality() const override { return size_; }
  ElementSpec element_spec() const override {
    ElementSpec out = values_.spec();
    for (auto& entry : out) entry.second.shape.erase(entry.second.shape.begin());
    return out;
  }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      explicit It(const TensorSlicesNode& node) : node_(node) {}
      std::optional<Element> next() override {
        if (i_ >= node_.size_) return std::nullopt;
        Element out;
        for (const auto& [key, value] : node_.values_.values()) out.set(key, slice_row(value, i_));
        ++i_;
        return out;
      }

     private:
      const TensorSlicesNode& node_;
      std::int64_t i_ = 0;
    };
    return std::make_unique<It>(*this);
  }

 private:
  Element values_;
  std::int64_t size_ = -1;
};

class GeneratorNode final : public detail::DatasetNode {
 public:
  GeneratorNode(std::function<Generator()> make, ElementSpec spec, std::int64_t cardinality, std::string name)
      : make_(std::move(make)), spec_(std::move(spec)), cardinality_(cardinality), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::int64_t cardinality() const override { return cardinality_; }
  ElementSpec element_spec() const override { return spec_; }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<detail::GeneratorIterator>(make_());
  }

 private:
  std::function<Generator()> make_;
  ElementSpec spec_;
  std::int64_t cardinality_;
  std::string name_;
};

}  // namespace

Dataset Dataset::from_tensor_slices(const Element& values) {
  return Dataset(std::make_shared<TensorSlicesNode>(values));
}

Dataset Dataset::from_generator(std::function<Generator()> make, ElementSpec spec, std::int64_t cardinality,
                                std::string name) {
  if (!make) throw ValueError("from_generator: the generator factory is empty");
  return Dataset(std::make_shared<GeneratorNode>(std::move(make), std::move(spec), cardinality, std::move(name)));
}

Dataset Dataset::range(std::int64_t stop) { return range(0, stop, 1); }

Dataset Dataset::range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  if (step == 0) throw ValueError("range: step must not be 0");
  const std::int64_t count = step > 0 ? std::max<std::int64_t>(0, (stop - start + step - 1) / step)
                                      : std::max<std::int64_t>(0, (start - stop - step - 1) / -step);
  return from_generator(
      [start, step, count]() -> Generator {
        return [start, step, count, i = std::int64_t{0}]() mutable -> std::optional<Element> {
          if (i >= count) return std::nullopt;
          return Element{{"value", Tensor::from_vector<std::int64_t>({start + step * i++}, Shape())}};
        };
      },
      {{"value", ValueSpec{{}, DType::int64, false}}}, count, "range");
}

}  // namespace kestrel::data
