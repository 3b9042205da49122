#include "datasets/text/encoding.h"

#include <array>
#include <string>
#include <utility>

#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"

namespace kestrel::text {
namespace {

Tensor row_tensor(const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>(values, Shape{static_cast<std::int64_t>(values.size())});
}

}  // namespace

data::Element Encoding::to_element() const {
  data::Element element;
  for (const auto& [name, field] : kEncodingFields) {
    const std::vector<std::int64_t>& values = this->*field;
    if (field == &Encoding::input_ids || !values.empty()) element.set(name, row_tensor(values));
  }
  return element;
}

Encoding Encoding::from_element(const data::Element& element) {
  Encoding encoding;
  for (const auto& [name, field] : kEncodingFields) {
    if (field != &Encoding::input_ids && !element.contains(name)) continue;
    const Tensor& tensor = element.tensor(name);  // throws ValueError naming the keys when input_ids is absent
    if (tensor.rank() != 1) {
      throw ShapeError(std::string("[Encoding] '") + name + "' is " + tensor.spec().to_string() +
                       "; an encoding holds rank-1 [L] tensors (use BatchEncoding for [n, L])");
    }
    encoding.*field = tensor.to_vector<std::int64_t>();
  }
  for (const auto& [name, field] : kEncodingFields) {
    const std::vector<std::int64_t>& values = encoding.*field;
    if (!values.empty() && values.size() != encoding.input_ids.size()) {
      throw ShapeError(std::string("[Encoding] '") + name + "' has " + std::to_string(values.size()) +
                       " values but input_ids has " + std::to_string(encoding.input_ids.size()));
    }
  }
  return encoding;
}

data::Element BatchEncoding::to_element() const {
  const auto n = static_cast<std::int64_t>(encodings.size());
  const std::int64_t length = encodings.empty() ? 0 : encodings.front().size();
  for (std::int64_t i = 0; i < n; ++i) {
    if (encodings[static_cast<std::size_t>(i)].size() != length) {
      throw ValueError("[BatchEncoding] sequence " + std::to_string(i) + " has " +
                       std::to_string(encodings[static_cast<std::size_t>(i)].size()) + " tokens but sequence 0 has " +
                       std::to_string(length) +
                       "; pad them to one length (EncodeOptions{.padding = Padding::longest}) first");
    }
  }
  data::Element element;
  for (const auto& [name, field] : kEncodingFields) {
    bool present = field == &Encoding::input_ids;
    for (const Encoding& e : encodings) present = present || !(e.*field).empty();
    if (!present) continue;
    std::vector<std::int64_t> values;
    values.reserve(static_cast<std::size_t>(n * length));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::vector<std::int64_t>& row = encodings[static_cast<std::size_t>(i)].*field;
      if (static_cast<std::int64_t>(row.size()) != length) {
        throw ValueError("[BatchEncoding] sequence " + std::to_string(i) + " has " + std::to_string(row.size()) +
                         " values in '" + name + "' for " + std::to_string(length) +
                         " tokens; every sequence needs the same fields");
      }
      values.insert(values.end(), row.begin(), row.end());
    }
    element.set(name, Tensor::from_vector<std::int64_t>(values, Shape{n, length}));
  }
  return element;
}

}  // namespace kestrel::text
