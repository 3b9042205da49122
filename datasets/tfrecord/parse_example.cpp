#include "datasets/tfrecord/parse_example.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "datasets/tfrecord/example.pb.h"
#include "framework/core/buffer.h"
#include "framework/core/error.h"

namespace kestrel::data {
namespace {

// One feature of the spec, with its default already broadcast to its shape.
struct Field {
  std::string name;
  FeatureDType dtype{};
  bool fixed = false;
  Shape shape;             // fixed features
  std::int64_t count = 0;  // values a fixed feature needs
  std::optional<Value> default_value;
};

std::string feature_error(const std::string& name, const std::string& problem) {
  return op_message("parse_example", "feature '" + name + "' " + problem);
}

example::Feature::KindCase kind_of(FeatureDType dtype) {
  switch (dtype) {
    case FeatureDType::int64: return example::Feature::kInt64List;
    case FeatureDType::float32: return example::Feature::kFloatList;
    case FeatureDType::string: return example::Feature::kBytesList;
  }
  return example::Feature::KIND_NOT_SET;
}

std::string kind_name(example::Feature::KindCase kind) {
  switch (kind) {
    case example::Feature::kInt64List: return "an Int64List (int64)";
    case example::Feature::kFloatList: return "a FloatList (float32)";
    case example::Feature::kBytesList: return "a BytesList (string)";
    case example::Feature::KIND_NOT_SET: break;
  }
  return "empty";
}

std::string dtype_fix(example::Feature::KindCase kind) {
  switch (kind) {
    case example::Feature::kInt64List: return "FeatureDType::int64";
    case example::Feature::kFloatList: return "FeatureDType::float32";
    default: return "FeatureDType::string";
  }
}

Value broadcast_default(const FixedLenFeature& f, const Shape& shape) {
  const Value& v = *f.default_value;
  const auto n = static_cast<std::size_t>(shape.numel());
  if (const auto* s = std::get_if<Strings>(&v)) {
    std::vector<std::string> values = s->size() == 1 ? std::vector<std::string>(n, s->values()[0]) : s->values();
    return Strings(std::move(values), shape);
  }
  const Tensor& t = std::get<Tensor>(v);
  if (f.dtype == FeatureDType::int64) {
    std::vector<std::int64_t> values = t.to_vector<std::int64_t>();
    if (values.size() == 1) values.assign(n, values[0]);
    return Tensor::from_vector<std::int64_t>(values, shape);
  }
  std::vector<float> values = t.to_vector<float>();
  if (values.size() == 1) values.assign(n, values[0]);
  return Tensor::from_vector<float>(values, shape);
}

std::vector<Field> compile(const FeatureSpec& spec) {
  validate_feature_spec(spec);
  std::vector<Field> fields;
  for (const auto& [name, config] : spec) {
    Field field{.name = name};
    if (const auto* fixed = std::get_if<FixedLenFeature>(&config)) {
      field.dtype = fixed->dtype;
      field.fixed = true;
      field.shape = Shape(fixed->shape);
      field.count = field.shape.numel();
      if (fixed->default_value) field.default_value = broadcast_default(*fixed, field.shape);
    } else {
      field.dtype = std::get<VarLenFeature>(config).dtype;
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

// A tensor holding a copy of a packed list: one allocation and one memcpy.
template <class T>
Tensor tensor_of(const google::protobuf::RepeatedField<T>& list, const Shape& shape, DType dtype) {
  auto buffer = Buffer::allocate(static_cast<std::size_t>(list.size()) * sizeof(T));
  if (list.size() > 0) std::memcpy(buffer->data(), list.data(), static_cast<std::size_t>(list.size()) * sizeof(T));
  return Tensor::from_buffer(std::move(buffer), shape, dtype);
}

Value empty_value(FeatureDType dtype, const Shape& shape) {
  if (dtype == FeatureDType::string) return Strings(std::vector<std::string>{}, shape);
  return Tensor::zeros(shape, dtype == FeatureDType::int64 ? DType::int64 : DType::float32);
}

std::string present_keys(const example::Example& ex) {
  std::vector<std::string> keys;
  for (const auto& entry : ex.features().feature()) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i];
  return out + "]";
}

Value parse_field(const Field& field, const example::Example& ex) {
  const auto& features = ex.features().feature();
  const auto it = features.find(field.name);
  if (it == features.end()) {
    if (!field.fixed) return empty_value(field.dtype, Shape{0});
    if (field.default_value) return *field.default_value;
    throw ValueError(feature_error(field.name, "is missing from the record (it has " + present_keys(ex) +
                                                   "); give its FixedLenFeature a default_value, or use "
                                                   "VarLenFeature for a feature that may be absent"));
  }
  const example::Feature& f = it->second;
  const example::Feature::KindCase want = kind_of(field.dtype);
  if (f.kind_case() != want && f.kind_case() != example::Feature::KIND_NOT_SET) {
    throw ValueError(feature_error(field.name, "is " + kind_name(f.kind_case()) +
                                                   " in the record, but the spec asks for " + to_string(field.dtype) +
                                                   "; set its dtype to " + dtype_fix(f.kind_case())));
  }
  std::int64_t count = 0;
  if (f.kind_case() == example::Feature::kInt64List) count = f.int64_list().value_size();
  if (f.kind_case() == example::Feature::kFloatList) count = f.float_list().value_size();
  if (f.kind_case() == example::Feature::kBytesList) count = f.bytes_list().value_size();
  if (field.fixed && count != field.count) {
    throw ValueError(feature_error(field.name, "has " + std::to_string(count) + " values, but FixedLenFeature shape " +
                                                   field.shape.to_string() + " needs " + std::to_string(field.count) +
                                                   "; write records with exactly that many (pad or truncate), "
                                                   "or use VarLenFeature"));
  }
  const Shape shape = field.fixed ? field.shape : Shape{count};
  if (f.kind_case() == example::Feature::KIND_NOT_SET) return empty_value(field.dtype, shape);
  switch (field.dtype) {
    case FeatureDType::int64: return tensor_of(f.int64_list().value(), shape, DType::int64);
    case FeatureDType::float32: return tensor_of(f.float_list().value(), shape, DType::float32);
    case FeatureDType::string: {
      const auto& list = f.bytes_list().value();
      return Strings(std::vector<std::string>(list.begin(), list.end()), shape);
    }
  }
  return {};
}

Element parse_with(std::string_view serialized, const std::vector<Field>& fields) {
  // An arena turns the many small allocations of a parsed Example into a few large ones; its
  // first block lives on the stack, so a typical record allocates nothing for the Example.
  alignas(16) char first_block[8192];
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = first_block;
  arena_options.initial_block_size = sizeof first_block;
  google::protobuf::Arena arena(arena_options);
  auto* ex = google::protobuf::Arena::CreateMessage<example::Example>(&arena);
  if (serialized.size() > INT_MAX || !ex->ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    throw ValueError(op_message("parse_example", "the record (" + std::to_string(serialized.size()) +
                                                     " bytes) is not a serialized tf.train.Example; check that "
                                                     "the file holds Examples and not other records"));
  }
  std::map<std::string, Value> values;
  for (const Field& field : fields) values.emplace(field.name, parse_field(field, *ex));
  return Element(std::move(values));
}

}  // namespace

Element parse_example(std::string_view serialized, const FeatureSpec& spec) {
  return parse_with(serialized, compile(spec));
}

std::function<Element(Element)> parse_example_fn(FeatureSpec spec, std::string record_key) {
  auto fields = std::make_shared<const std::vector<Field>>(compile(spec));
  return [fields, key = std::move(record_key)](Element e) { return parse_with(e.strings(key).scalar(), *fields); };
}

}  // namespace kestrel::data
