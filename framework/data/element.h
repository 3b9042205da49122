// Element: one item of a Dataset, a named map of values (as tf.data's dict elements).
//
//   data::Element e{{"input_ids", ids}, {"label", Tensor::scalar(3, DType::int64)}};
//   e.tensor("input_ids");                 // the tensor; a missing key throws, naming the keys present
//   e.set("text", data::Strings("hello")); // a scalar string (tf.string)
//   e.strings("text").scalar();            // "hello"
//
// A value is a Tensor or a Strings (the tf.string tensor: UTF-8 byte strings with a shape), so text
// flows through the pipeline untouched until a map() tokenizes it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/tensor.h"

namespace kestrel::data {

/// A shaped array of byte strings (tf.string). Shape [] holds one string.
class Strings {
 public:
  Strings() = default;
  /// A scalar string.
  explicit Strings(std::string value);
  /// A 1-D array of strings.
  explicit Strings(std::vector<std::string> values);
  /// A 1-D array of strings: Strings({"a", "b"}) (without this, two literals read as an iterator pair).
  Strings(std::initializer_list<std::string> values) : Strings(std::vector<std::string>(values)) {}
  /// Values in row-major order for `shape`; throws ShapeError when the count does not match.
  Strings(std::vector<std::string> values, const Shape& shape);

  const Shape& shape() const { return shape_; }
  const std::vector<std::string>& values() const { return values_; }
  std::int64_t size() const { return static_cast<std::int64_t>(values_.size()); }
  /// The one string of a scalar; throws ShapeError for other shapes.
  const std::string& scalar() const;
  friend bool operator==(const Strings&, const Strings&) = default;

 private:
  std::vector<std::string> values_;
  Shape shape_;
};

using Value = std::variant<Tensor, Strings>;

/// Shape and type of one value of an element; -1 in shape is a dimension that varies.
struct ValueSpec {
  std::vector<std::int64_t> shape;
  DType dtype = DType::float32;
  bool is_string = false;
  friend bool operator==(const ValueSpec&, const ValueSpec&) = default;
  /// "int64[-1]" or "string[]"
  std::string to_string() const;
};

using ElementSpec = std::map<std::string, ValueSpec>;
/// "{input_ids: int64[-1], label: int64[]}"
std::string to_string(const ElementSpec& spec);
/// The spec of a concrete value.
ValueSpec spec_of(const Value& value);

class Element {
 public:
  Element() = default;
  Element(std::initializer_list<std::pair<const std::string, Value>> values) : values_(values) {}
  explicit Element(std::map<std::string, Value> values) : values_(std::move(values)) {}

  bool contains(const std::string& key) const { return values_.count(key) != 0; }
  /// The value under key; throws ValueError naming the key and the keys present.
  const Value& at(const std::string& key) const;
  /// The tensor under key; throws TypeError when it holds strings.
  const Tensor& tensor(const std::string& key) const;
  /// The strings under key; throws TypeError when it holds a tensor.
  const Strings& strings(const std::string& key) const;
  void set(const std::string& key, Value value) { values_[key] = std::move(value); }
  /// Removes key; throws ValueError when absent.
  void erase(const std::string& key);

  const std::map<std::string, Value>& values() const { return values_; }
  std::vector<std::string> keys() const;
  ElementSpec spec() const;
  /// "[input_ids, label]", for error messages.
  std::string keys_string() const;
  friend bool operator==(const Element& a, const Element& b);

 private:
  std::map<std::string, Value> values_;
};

}  // namespace kestrel::data
