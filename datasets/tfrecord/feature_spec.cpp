#include "datasets/tfrecord/feature_spec.h"

#include "framework/core/error.h"

namespace kestrel::data {
namespace {

std::int64_t count_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

bool integer_dtype(DType d) { return d == DType::int64 || d == DType::int32 || d == DType::bool_; }
bool float_dtype(DType d) { return d == DType::float32 || d == DType::bfloat16; }

std::string spec_error(const std::string& name, const std::string& problem) {
  return op_message("parse_example", "feature '" + name + "': " + problem);
}

void validate_default(const std::string& name, const FixedLenFeature& f) {
  const Value& v = *f.default_value;
  const std::int64_t want = count_of(f.shape);
  std::int64_t have = 0;
  if (f.dtype == FeatureDType::string) {
    const auto* s = std::get_if<Strings>(&v);
    if (!s) {
      throw ValueError(spec_error(name,
                                  "the default_value of a string feature must be data::Strings, "
                                  "e.g. data::Strings(\"\")"));
    }
    have = s->size();
  } else {
    const auto* t = std::get_if<Tensor>(&v);
    const bool is_int = f.dtype == FeatureDType::int64;
    if (!t || !t->defined() || !(is_int ? integer_dtype(t->dtype()) : float_dtype(t->dtype()))) {
      throw ValueError(spec_error(name, std::string("the default_value of ") + (is_int ? "an int64" : "a float32") +
                                            " feature must be a" + (is_int ? "n integer" : " float32") +
                                            " Tensor, e.g. Tensor::scalar(0, " +
                                            (is_int ? "DType::int64" : "DType::float32") + ")"));
    }
    have = t->numel();
  }
  if (have != 1 && have != want) {
    throw ValueError(spec_error(name, "the default_value has " + std::to_string(have) +
                                          " values; give one (broadcast) or " + std::to_string(want) + " for shape " +
                                          dims_to_string(f.shape)));
  }
}

}  // namespace

std::string to_string(FeatureDType dtype) {
  switch (dtype) {
    case FeatureDType::int64: return "int64";
    case FeatureDType::float32: return "float32";
    case FeatureDType::string: return "string";
  }
  return "?";
}

ElementSpec element_spec(const FeatureSpec& spec) {
  ElementSpec out;
  for (const auto& [name, config] : spec) {
    ValueSpec v;
    FeatureDType dtype{};
    if (const auto* fixed = std::get_if<FixedLenFeature>(&config)) {
      v.shape = fixed->shape;
      dtype = fixed->dtype;
    } else {
      v.shape = {-1};
      dtype = std::get<VarLenFeature>(config).dtype;
    }
    v.is_string = dtype == FeatureDType::string;
    v.dtype = dtype == FeatureDType::int64 ? DType::int64 : DType::float32;
    out[name] = v;
  }
  return out;
}

void validate_feature_spec(const FeatureSpec& spec) {
  for (const auto& [name, config] : spec) {
    const auto* fixed = std::get_if<FixedLenFeature>(&config);
    if (!fixed) continue;
    if (static_cast<int>(fixed->shape.size()) > Shape::kMaxRank) {
      throw ValueError(spec_error(name, "FixedLenFeature shape " + dims_to_string(fixed->shape) + " has more than " +
                                            std::to_string(Shape::kMaxRank) + " dimensions"));
    }
    for (std::int64_t d : fixed->shape) {
      if (d < 0) {
        throw ValueError(spec_error(name, "FixedLenFeature shape " + dims_to_string(fixed->shape) +
                                              " has an unknown dimension; use VarLenFeature for a "
                                              "varying number of values"));
      }
    }
    if (fixed->default_value) validate_default(name, *fixed);
  }
}

}  // namespace kestrel::data
