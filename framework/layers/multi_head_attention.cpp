#include "framework/layers/multi_head_attention.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/layers/autocast_scope.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/serialization.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
namespace {
// Keras's large negative for float32 masks: exp underflows to 0, and a fully masked row stays finite.
constexpr double kMaskedScore = -1e9;

std::int64_t product(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}
}  // namespace

namespace detail {

AttentionProjection::AttentionProjection(std::string name, int contracted, std::vector<std::int64_t> output_dims,
                                         bool use_bias, Initializer kernel_initializer, Initializer bias_initializer)
    : Layer("EinsumDense", std::move(name)),
      contracted_(contracted),
      output_dims_(std::move(output_dims)),
      use_bias_(use_bias),
      kernel_initializer_(std::move(kernel_initializer)),
      bias_initializer_(std::move(bias_initializer)) {}

void AttentionProjection::build(const Shape& input_shape) {
  if (input_shape.rank() <= contracted_) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() + "; expected rank > " +
                     std::to_string(contracted_));
  }
  std::vector<std::int64_t> kernel_dims;
  for (int d = input_shape.rank() - contracted_; d < input_shape.rank(); ++d) kernel_dims.push_back(input_shape[d]);
  for (std::int64_t d : output_dims_) kernel_dims.push_back(d);
  kernel_ = add_weight("kernel", Shape(kernel_dims), kernel_initializer_);
  if (use_bias_) bias_ = add_weight("bias", Shape(output_dims_), bias_initializer_);
}

Tensor AttentionProjection::call(const Tensor& x, bool training) {
  const Shape& k = kernel_.shape();
  bool fits = x.rank() > contracted_;
  for (int i = 0; fits && i < contracted_; ++i) fits = x.shape()[x.rank() - contracted_ + i] == k[i];
  if (!fits) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for kernel " +
                     k.to_string() + "; feed inputs of the shape it was first called with");
  }
  // [..., c1, c2] x [c1, c2, o1, o2] is a matmul of [..., c1*c2] by [c1*c2, o1*o2].
  std::int64_t in = 1;
  for (int i = 0; i < contracted_; ++i) in *= k[i];
  std::int64_t out = product(output_dims_);
  std::vector<std::int64_t> batch;
  for (int d = 0; d < x.rank() - contracted_; ++d) batch.push_back(x.shape()[d]);
  std::vector<std::int64_t> flat = batch;
  flat.push_back(in);
  const Tensor kernel = kernel_.value();
  const Tensor bias = bias_.defined() ? bias_.value() : Tensor();
  std::vector<std::int64_t> result = batch;
  result.insert(result.end(), output_dims_.begin(), output_dims_.end());
  // The bias in the product's epilogue, as Dense adds it (layers/dense.cpp), when its dtype is
  // the product's.
  const bool bias_in_epilogue = bias.defined() && x.dtype() == kernel.dtype() && bias.dtype() == kernel.dtype();
  Tensor y = ops::matmul(ops::reshape(x, flat), ops::reshape(kernel, {in, out}),
                         {.bias = bias_in_epilogue ? ops::reshape(bias, {out}) : Tensor()});
  y = ops::reshape(y, result);
  if (bias.defined() && !bias_in_epilogue) y = ops::add(y, bias);
  return y;
}

}  // namespace detail

namespace {
MultiHeadAttentionOptions checked(const Layer& layer, MultiHeadAttentionOptions options, int num_heads,
                                  std::int64_t key_dim) {
  if (num_heads <= 0 || key_dim <= 0) {
    throw ValueError(layer.error_prefix() + "num_heads is " + std::to_string(num_heads) + " and key_dim is " +
                     std::to_string(key_dim) + "; both must be positive");
  }
  if (options.value_dim && *options.value_dim <= 0) {
    throw ValueError(layer.error_prefix() + "value_dim is " + std::to_string(*options.value_dim) +
                     "; it must be positive");
  }
  if (options.output_shape && *options.output_shape <= 0) {
    throw ValueError(layer.error_prefix() + "output_shape is " + std::to_string(*options.output_shape) +
                     "; it must be positive");
  }
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    std::ostringstream r;
    r << options.dropout;
    throw ValueError(layer.error_prefix() + "dropout is " + r.str() + "; it must be in [0, 1)");
  }
  return options;
}
}  // namespace

MultiHeadAttention::MultiHeadAttention(int num_heads, std::int64_t key_dim, MultiHeadAttentionOptions options)
    : Layer("MultiHeadAttention", options.name, options.dtype),
      num_heads_(num_heads),
      key_dim_(key_dim),
      value_dim_(options.value_dim.value_or(key_dim)),
      options_(checked(*this, std::move(options), num_heads, key_dim)),
      query_(add_as<detail::AttentionProjection>("query_dense", "query", 1,
                                                 std::vector<std::int64_t>{num_heads, key_dim}, options_.use_bias,
                                                 options_.kernel_initializer, options_.bias_initializer)),
      key_(add_as<detail::AttentionProjection>("key_dense", "key", 1, std::vector<std::int64_t>{num_heads, key_dim},
                                               options_.use_bias, options_.kernel_initializer,
                                               options_.bias_initializer)),
      value_(add_as<detail::AttentionProjection>("value_dense", "value", 1,
                                                 std::vector<std::int64_t>{num_heads, value_dim_}, options_.use_bias,
                                                 options_.kernel_initializer, options_.bias_initializer)),
      // Keras keeps the dropout only as the private _dropout_layer; it holds no weights.
      dropout_(add_as<Dropout>("_dropout_layer", options_.dropout, DropoutOptions{.seed = options_.seed})),
      // The output size comes from the query, so build() sets it.
      output_(add_as<detail::AttentionProjection>("output_dense", "attention_output", 2, std::vector<std::int64_t>{},
                                                  options_.use_bias, options_.kernel_initializer,
                                                  options_.bias_initializer)) {}

void MultiHeadAttention::build(const Shape& query_shape) {
  if (query_shape.rank() != 3) {
    throw ShapeError(error_prefix() + "query is " + query_shape.to_string() +
                     "; MultiHeadAttention takes [batch, positions, features]");
  }
  output_.set_output_dims({options_.output_shape.value_or(query_shape[-1])});
}

Tensor MultiHeadAttention::mask_bias(const Tensor& attention_mask, bool use_causal_mask, std::int64_t batch,
                                     std::int64_t t, std::int64_t s, DType dtype) const {
  Tensor keep;  // 1 = attend, 0 = masked, broadcastable to [B, heads, T, S]
  if (attention_mask.defined()) {
    const Shape& m = attention_mask.shape();
    bool ok = (m.rank() == 2 && (m[0] == batch || m[0] == 1) && m[1] == s) ||
              (m.rank() == 3 && (m[0] == batch || m[0] == 1) && (m[1] == t || m[1] == 1) && m[2] == s);
    if (!ok) {
      throw ShapeError(error_prefix() + "attention_mask is " + m.to_string() + " for a query of " + std::to_string(t) +
                       " positions and a value of " + std::to_string(s) + " positions (batch " + std::to_string(batch) +
                       "); pass [" + std::to_string(batch) + "," + std::to_string(s) +
                       "] (a padding mask over keys) or [" + std::to_string(batch) + "," + std::to_string(t) + "," +
                       std::to_string(s) + "]");
    }
    // Any nonzero entry means "attend", whatever the mask's dtype.
    Tensor mask = ops::cast(ops::cast(attention_mask, DType::bool_), dtype);
    keep = m.rank() == 2 ? ops::reshape(mask, {m[0], 1, 1, s}) : ops::reshape(mask, {m[0], 1, m[1], s});
  }
  if (use_causal_mask) {
    // A constant of the shapes alone: query position i sees key positions j <= i.
    std::vector<float> lower(static_cast<std::size_t>(t * s));
    for (std::int64_t i = 0; i < t; ++i) {
      for (std::int64_t j = 0; j < s; ++j) lower[static_cast<std::size_t>(i * s + j)] = j <= i ? 1.0f : 0.0f;
    }
    Tensor causal = ops::cast(Tensor::from_vector<float>(lower, {1, 1, t, s}), dtype);
    keep = keep.defined() ? ops::multiply(keep, causal) : causal;
  }
  if (!keep.defined()) return keep;
  return ops::multiply(ops::subtract(ops::scalar_like(keep, 1.0), keep), ops::scalar_like(keep, kMaskedScore));
}

namespace {

bool on_keras_tensors(const Tensor& query, const Tensor& value) {
  return (query.defined() && functional::is_keras_tensor(query)) ||
         (value.defined() && functional::is_keras_tensor(value));
}

// The call options a Functional call passed by keyword, under Keras's names.
AttentionCallOptions keyword_options(const Layer& layer, const functional::Keywords& keywords,
                                     const std::vector<Tensor>& keyword_tensors) {
  AttentionCallOptions options;
  for (std::size_t i = 0; i < keywords.tensors.size(); ++i) {
    const std::string& name = keywords.tensors[i];
    if (name == "key") {
      options.key = keyword_tensors[i];
    } else if (name == "attention_mask") {
      options.attention_mask = keyword_tensors[i];
    } else {
      throw ValueError(layer.error_prefix() + "takes key and attention_mask tensors by keyword, not '" + name + "'");
    }
  }
  options.use_causal_mask = functional::use_causal_mask(keywords, layer.error_prefix());
  return options;
}

}  // namespace

Tensor MultiHeadAttention::record(std::shared_ptr<Layer> kept, const Tensor& query, const Tensor& value,
                                  const AttentionCallOptions& options) {
  std::vector<Tensor> inputs{query, value};
  functional::RecordOptions record;
  for (const auto& [name, tensor] : {std::pair<const char*, Tensor>{"key", options.key},
                                     std::pair<const char*, Tensor>{"attention_mask", options.attention_mask}}) {
    if (!tensor.defined()) continue;
    inputs.push_back(tensor);
    record.keywords.tensors.emplace_back(name);
  }
  if (options.use_causal_mask) record.keywords.flags.emplace_back("use_causal_mask", true);
  record.call = [this, keywords = record.keywords](const std::vector<Tensor>& xs, bool training) {
    AttentionCallOptions replay = keyword_options(*this, keywords, std::vector<Tensor>(xs.begin() + 2, xs.end()));
    replay.training = training;
    return (*this)(xs[0], xs[1], replay);
  };
  return functional::record_call(*this, std::move(kept), std::move(inputs), std::move(record));
}

Tensor MultiHeadAttention::operator()(const Tensor& query, const Tensor& value,
                                      const AttentionCallOptions& options) && {
  if (!on_keras_tensors(query, value)) return (*this)(query, value, options);
  const std::shared_ptr<Layer> kept = move_to_heap(std::move(*this));
  return static_cast<MultiHeadAttention&>(*kept).record(kept, query, value, options);
}

Tensor MultiHeadAttention::call_recorded(const functional::RecordedCall& call) {
  if (call.list || call.positional.size() != 2 || !call.input_keys.empty()) {
    throw ValueError(error_prefix() + "takes query and value as its two arguments, and the call passes " +
                     std::to_string(call.positional.size()) + (call.list ? " in a list" : ""));
  }
  return (*this)(call.positional[0], call.positional[1], keyword_options(*this, call.keywords, call.keyword_tensors));
}

Tensor MultiHeadAttention::operator()(const Tensor& query_in, const Tensor& value_in,
                                      const AttentionCallOptions& options) & {
  if (!query_in.defined() || !value_in.defined()) {
    throw ValueError(error_prefix() + "query and value must both be given (for self-attention pass x twice)");
  }
  if (on_keras_tensors(query_in, value_in)) return record(nullptr, query_in, value_in, options);
  const CallScope scope(*this);
  const Tensor query = scope.input(query_in);
  const Tensor value = scope.input(value_in);
  maybe_build(query.shape());
  const Tensor key = options.key.defined() ? scope.input(options.key) : value;
  if (value.rank() != 3 || key.rank() != 3 || value.shape()[0] != query.shape()[0] ||
      key.shape()[0] != query.shape()[0] || key.shape()[1] != value.shape()[1]) {
    throw ShapeError(error_prefix() + "query is " + query.shape().to_string() + ", key is " + key.shape().to_string() +
                     " and value is " + value.shape().to_string() +
                     "; expected [B,T,dq], [B,S,dk], [B,S,dv] with one batch size B and one key length S");
  }
  const std::int64_t batch = query.shape()[0];
  const std::int64_t t = query.shape()[1];
  const std::int64_t s = value.shape()[1];

  Tensor q = query_(query, options.training);  // [B, T, H, K]
  Tensor k = key_(key, options.training);      // [B, S, H, K]
  Tensor v = value_(value, options.training);  // [B, S, H, V]
  // Scaling the query rather than the scores touches T*K elements instead of T*S.
  q = ops::multiply(q, ops::scalar_like(q, 1.0 / std::sqrt(static_cast<double>(key_dim_))));
  q = ops::transpose(q, {0, 2, 1, 3});
  k = ops::transpose(k, {0, 2, 1, 3});
  v = ops::transpose(v, {0, 2, 1, 3});

  Tensor scores = ops::matmul(q, k, {.transpose_b = true});  // [B, H, T, S]
  Tensor bias = mask_bias(options.attention_mask, options.use_causal_mask, batch, t, s, scores.dtype());
  if (bias.defined()) scores = ops::add(scores, bias);
  Tensor probs = dropout_(ops::softmax(scores, -1), options.training);
  Tensor context = ops::transpose(ops::matmul(probs, v), {0, 2, 1, 3});  // [B, T, H, V]
  Tensor y = output_(context, options.training);
  record_output_shape(y.shape());
  return y;
}

nlohmann::json MultiHeadAttention::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const MultiHeadAttentionOptions& o = options_;
  nlohmann::json config = Layer::get_config();
  config["num_heads"] = num_heads_;
  config["key_dim"] = key_dim_;
  config["value_dim"] = value_dim_;
  config["dropout"] = o.dropout;
  config["use_bias"] = o.use_bias;
  // Keras keeps output_shape as a tuple: [64], or null for the query's last dim.
  config["output_shape"] = o.output_shape ? nlohmann::json::array({*o.output_shape}) : nlohmann::json(nullptr);
  config["attention_axes"] = nullptr;
  config["kernel_initializer"] = to_config(o.kernel_initializer);
  config["bias_initializer"] = to_config(o.bias_initializer);
  put_null(config,
           {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
  config["seed"] = seed_to_config(o.seed);
  return config;
}

MultiHeadAttention MultiHeadAttention::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'MultiHeadAttention'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config,
             {"kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"},
             what);
  check_unsupported(config, "attention_axes", nullptr, what,
                    "Kestrel's MultiHeadAttention attends over the positions of [batch, positions, features] "
                    "inputs: set 'attention_axes' to null");
  check_unsupported(config, "use_gate", false, what,
                    "Kestrel's MultiHeadAttention has no output gate: set 'use_gate' to false");
  check_unsupported(config, "sliding_window", nullptr, what,
                    "Kestrel's MultiHeadAttention attends to every position (mask others with attention_mask): set "
                    "'sliding_window' to null");
  std::optional<std::int64_t> output_shape;
  if (config.contains("output_shape") && !config.at("output_shape").is_null()) {
    // An int or a tuple of one: Kestrel's output is [batch, positions, output_shape].
    const nlohmann::json& shape = config.at("output_shape");
    const nlohmann::json& last = shape.is_array() && shape.size() == 1 ? shape[0] : shape;
    if (!last.is_number_integer()) {
      throw ValueError(what + ": 'output_shape' in the config is " + shape.dump() +
                       "; Kestrel's MultiHeadAttention takes one output dim, as an int or a list of one int");
    }
    output_shape = last.get<std::int64_t>();
  }
  const std::optional<std::int64_t> value_dim =
      config.contains("value_dim") && !config.at("value_dim").is_null()
          ? std::optional<std::int64_t>(required<std::int64_t>(config, "value_dim", what))
          : std::nullopt;
  return MultiHeadAttention(required<int>(config, "num_heads", what), required<std::int64_t>(config, "key_dim", what),
                            {.value_dim = value_dim,
                             .dropout = optional<double>(config, "dropout", 0.0, what),
                             .use_bias = optional<bool>(config, "use_bias", true, what),
                             .output_shape = output_shape,
                             .kernel_initializer = config.contains("kernel_initializer")
                                                       ? initializer_from_config(config.at("kernel_initializer"), what)
                                                       : Initializer("glorot_uniform"),
                             .bias_initializer = config.contains("bias_initializer")
                                                     ? initializer_from_config(config.at("bias_initializer"), what)
                                                     : Initializer("zeros"),
                             .seed = seed_from_config(config, what),
                             .name = std::move(base.name),
                             .dtype = base.dtype});
}

}  // namespace kestrel::layers
