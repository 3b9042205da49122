#include "framework/data/batching.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data::detail {
namespace {

// Every element must have the same keys, kinds, dtypes and ranks; the message says which differs.
void check_compatible(const std::vector<Element>& elements, const std::string& transform) {
  const Element& first = elements.front();
  for (std::size_t i = 1; i < elements.size(); ++i) {
    const Element& e = elements[i];
    if (e.keys() != first.keys()) {
      throw ValueError(transform + ": element " + std::to_string(i) + " of the batch has keys " + e.keys_string() +
                       " but element 0 has " + first.keys_string() + "; every element must have the same keys");
    }
    for (const auto& [key, value] : e.values()) {
      ValueSpec a = spec_of(first.at(key));
      ValueSpec b = spec_of(value);
      if (a.is_string != b.is_string || a.dtype != b.dtype || a.shape.size() != b.shape.size()) {
        throw TypeError(transform + ": key '" + key + "' is " + b.to_string() + " in element " + std::to_string(i) +
                        " but " + a.to_string() + " in element 0; cast in a map() so they agree");
      }
    }
  }
}

// Calls copy(src_index, dst_index, count) for each contiguous run that places a row-major block
// of shape `from` at the origin of a row-major block of shape `to` (every from[d] <= to[d]).
void for_each_run(const std::vector<std::int64_t>& from, const std::vector<std::int64_t>& to,
                  const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& copy) {
  const std::size_t rank = from.size();
  if (rank == 0) {
    copy(0, 0, 1);
    return;
  }
  std::vector<std::int64_t> to_strides(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) to_strides[d - 1] = to_strides[d] * to[d];
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= from[d];
  const std::int64_t run = from[rank - 1];
  if (run == 0) return;
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t dst = 0;
    for (std::size_t d = 0; d + 1 < rank; ++d) dst += index[d] * to_strides[d];
    copy(r * run, dst, run);
    for (std::size_t d = rank - 1; d-- > 0;) {  // odometer over the leading dimensions
      if (++index[d] < from[d]) break;
      index[d] = 0;
    }
  }
}

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

// Writes `values` (each of its own shape, all fitting in `target`) into one batch value.
Value stack_value(const std::vector<const Value*>& values, const std::vector<std::int64_t>& target,
                  double padding_value) {
  const std::int64_t per_element = numel(target);
  std::vector<std::int64_t> batch_shape{static_cast<std::int64_t>(values.size())};
  batch_shape.insert(batch_shape.end(), target.begin(), target.end());
  if (std::holds_alternative<Strings>(*values.front())) {
    std::vector<std::string> out(static_cast<std::size_t>(per_element) * values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const Strings& s = std::get<Strings>(*values[i]);
      const std::int64_t base = static_cast<std::int64_t>(i) * per_element;
      for_each_run(s.shape().to_vector(), target, [&](std::int64_t src, std::int64_t dst, std::int64_t count) {
        for (std::int64_t k = 0; k < count; ++k)
          out[static_cast<std::size_t>(base + dst + k)] = s.values()[static_cast<std::size_t>(src + k)];
      });
    }
    return Strings(std::move(out), Shape(batch_shape));
  }
  const Tensor& first = std::get<Tensor>(*values.front());
  const DType dtype = first.dtype();
  const std::size_t item = size_of(dtype);
  Tensor out = padding_value == 0.0 ? Tensor::zeros(Shape(batch_shape), dtype)
                                    : Tensor::full(Shape(batch_shape), padding_value, dtype);
  auto* dst_bytes = static_cast<char*>(out.view().data);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Tensor& t = std::get<Tensor>(*values[i]);
    const auto* src_bytes = static_cast<const char*>(t.raw_data());
    char* base = dst_bytes + static_cast<std::size_t>(i) * static_cast<std::size_t>(per_element) * item;
    for_each_run(t.shape().to_vector(), target, [&](std::int64_t src, std::int64_t dst, std::int64_t count) {
      std::memcpy(base + static_cast<std::size_t>(dst) * item, src_bytes + static_cast<std::size_t>(src) * item,
                  static_cast<std::size_t>(count) * item);
    });
  }
  return out;
}

std::vector<const Value*> values_of(const std::vector<Element>& elements, const std::string& key) {
  std::vector<const Value*> out;
  out.reserve(elements.size());
  for (const Element& e : elements) out.push_back(&e.at(key));
  return out;
}

std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return multiple <= 1 ? n : (n + multiple - 1) / multiple * multiple;
}

}  // namespace

Element stack_elements(const std::vector<Element>& elements, const std::string& transform) {
  check_compatible(elements, transform);
  Element out;
  for (const auto& [key, first] : elements.front().values()) {
    const std::vector<std::int64_t> shape = spec_of(first).shape;
    for (std::size_t i = 1; i < elements.size(); ++i) {
      ValueSpec other = spec_of(elements[i].at(key));
      if (other.shape != shape) {
        throw ShapeError(transform + ": key '" + key + "' is " + other.to_string() + " in element " +
                         std::to_string(i) + " of the batch but " + spec_of(first).to_string() +
                         " in element 0; elements of different shapes need padded_batch(batch_size, "
                         "{.pad_to_multiple_of = 32}) or a collator");
      }
    }
    out.set(key, stack_value(values_of(elements, key), shape, 0.0));
  }
  return out;
}

Element pad_and_stack(const std::vector<Element>& elements, const PadSpec& spec, const std::string& transform,
                      PaddingStats* stats) {
  check_compatible(elements, transform);
  auto check_key = [&](const std::string& key, const char* option) {
    if (!elements.front().contains(key)) {
      throw ValueError(transform + ": " + option + " names key '" + key +
                       "', which the elements do not have; keys are " + elements.front().keys_string());
    }
  };
  for (const auto& entry : spec.padded_shapes) check_key(entry.first, "padded_shapes");
  for (const auto& entry : spec.padding_values) {
    check_key(entry.first, "padding_values");
    if (std::holds_alternative<Strings>(elements.front().at(entry.first))) {
      throw TypeError(transform + ": padding_values['" + entry.first +
                      "'] is a number but the key holds strings, which pad with the empty string");
    }
  }
  Element out;
  std::int64_t real = 0;
  std::int64_t padded = 0;
  for (const auto& [key, first] : elements.front().values()) {
    const std::size_t rank = spec_of(first).shape.size();
    // The longest along each dimension, or the fixed size that padded_shapes asks for.
    std::vector<std::int64_t> target(rank, 0);
    for (const Element& e : elements) {
      ValueSpec s = spec_of(e.at(key));
      for (std::size_t d = 0; d < rank; ++d) target[d] = std::max(target[d], s.shape[d]);
      if (rank > 0) real += numel(s.shape);
    }
    auto fixed = spec.padded_shapes.find(key);
    if (fixed != spec.padded_shapes.end() && fixed->second.size() != rank) {
      throw ShapeError(transform + ": padded_shapes['" + key + "'] has rank " + std::to_string(fixed->second.size()) +
                       " but the values have rank " + std::to_string(rank));
    }
    for (std::size_t d = 0; d < rank; ++d) {
      const bool is_fixed = fixed != spec.padded_shapes.end() && fixed->second[d] >= 0;
      if (!is_fixed) {
        target[d] = round_up(target[d], spec.pad_to_multiple_of);
        continue;
      }
      if (fixed->second[d] < target[d]) {
        throw ShapeError(transform + ": key '" + key + "' has length " + std::to_string(target[d]) + " in dimension " +
                         std::to_string(d) + ", more than padded_shapes allows (" + std::to_string(fixed->second[d]) +
                         "); truncate it in a map() (the tokenizer's max_length) or raise padded_shapes");
      }
      target[d] = fixed->second[d];
    }
    if (rank > 0) padded += numel(target) * static_cast<std::int64_t>(elements.size());
    auto value = spec.padding_values.find(key);
    out.set(key,
            stack_value(values_of(elements, key), target, value == spec.padding_values.end() ? 0.0 : value->second));
  }
  if (stats != nullptr && !probing()) stats->record(shape_signature(out), real, padded);
  return out;
}

std::string shape_signature(const Element& batch) {
  std::string out;
  for (const auto& [key, value] : batch.values())
    out += (out.empty() ? "" : " ") + key + ":" + spec_of(value).to_string();
  return out;
}

}  // namespace kestrel::data::detail
