#include "framework/data/element.h"

#include <cstring>
#include <sstream>

#include "framework/core/error.h"

namespace kestrel::data {

Strings::Strings(std::string value) : values_{std::move(value)}, shape_{} {}

Strings::Strings(std::vector<std::string> values)
    : values_(std::move(values)), shape_{static_cast<std::int64_t>(values_.size())} {}

Strings::Strings(std::vector<std::string> values, const Shape& shape) : values_(std::move(values)), shape_(shape) {
  if (shape_.numel() != static_cast<std::int64_t>(values_.size())) {
    throw ShapeError("Strings: " + std::to_string(values_.size()) + " values do not fill shape " + shape_.to_string());
  }
}

const std::string& Strings::scalar() const {
  if (shape_.rank() != 0) {
    throw ShapeError("Strings::scalar: the strings have shape " + shape_.to_string() + ", not []");
  }
  return values_.front();
}

std::string ValueSpec::to_string() const {
  std::ostringstream out;
  out << (is_string ? std::string_view("string") : kestrel::to_string(dtype)) << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
  return out.str();
}

std::string to_string(const ElementSpec& spec) {
  std::string out = "{";
  for (const auto& [key, value] : spec) out += (out.size() > 1 ? ", " : "") + key + ": " + value.to_string();
  return out + "}";
}

ValueSpec spec_of(const Value& value) {
  if (const auto* t = std::get_if<Tensor>(&value)) {
    if (!t->defined()) throw ValueError("an element holds an undefined tensor, which has no spec");
    return {t->shape().to_vector(), t->dtype(), false};
  }
  const auto& s = std::get<Strings>(value);
  return {s.shape().to_vector(), DType::float32, true};
}

const Value& Element::at(const std::string& key) const {
  auto found = values_.find(key);
  if (found == values_.end()) {
    throw ValueError("element has no key '" + key + "'; its keys are " + keys_string());
  }
  return found->second;
}

const Tensor& Element::tensor(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* t = std::get_if<Tensor>(&v)) return *t;
  throw TypeError("element key '" + key + "' holds strings, not a tensor; tokenize it in a map() first");
}

const Strings& Element::strings(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* s = std::get_if<Strings>(&v)) return *s;
  throw TypeError("element key '" + key + "' holds a tensor (" + std::get<Tensor>(v).spec().to_string() +
                  "), not strings");
}

void Element::erase(const std::string& key) {
  if (values_.erase(key) == 0)
    throw ValueError("element has no key '" + key + "' to erase; its keys are " + keys_string());
}

std::vector<std::string> Element::keys() const {
  std::vector<std::string> out;
  for (const auto& entry : values_) out.push_back(entry.first);
  return out;
}

ElementSpec Element::spec() const {
  ElementSpec out;
  for (const auto& [key, value] : values_) out[key] = spec_of(value);
  return out;
}

std::string Element::keys_string() const {
  std::string out = "[";
  for (const auto& entry : values_) out += (out.size() > 1 ? ", " : "") + entry.first;
  return out + "]";
}

bool operator==(const Element& a, const Element& b) {
  if (a.values_.size() != b.values_.size()) return false;
  for (const auto& [key, value] : a.values_) {
    auto other = b.values_.find(key);
    if (other == b.values_.end() || value.index() != other->second.index()) return false;
    if (const auto* s = std::get_if<Strings>(&value)) {
      if (*s != std::get<Strings>(other->second)) return false;
      continue;
    }
    const Tensor& x = std::get<Tensor>(value);
    const Tensor& y = std::get<Tensor>(other->second);
    if (x.spec() != y.spec() || std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace kestrel::data
