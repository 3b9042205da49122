// Neural-network ops: softmax, cross-entropy, layer normalization, dropout, activations' kin.
//
//   Tensor p = ops::softmax(logits);                                   // over the last axis
//   Tensor loss = ops::sparse_softmax_cross_entropy(logits, labels);   // labels -100 are ignored
//   Tensor h = ops::layer_norm(x, gamma, beta, {.epsilon = 1e-12});
//   Tensor d = ops::dropout(x, 0.1, random::key_tensor(random::Key(7)));
//   Tensor k = random::fold_in(key, step);   // an int64 step tensor; traces, unlike Key::fold_in
#pragma once

#include <cstdint>

#include "framework/core/random.h"
#include "framework/core/tensor.h"

namespace kestrel::ops {

Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

struct CrossEntropyOptions {
  /// Labels equal to this contribute zero loss and zero gradient (Hugging Face's -100).
  std::int64_t ignore_index = -100;
};
/// Per-example -log softmax(logits)[label]: logits [..., C] float32 or bfloat16, labels [...]
/// int32/int64 -> loss [...], float32 either way (bfloat16 logits are read as their float32
/// values). Computed in one pass with a fused log_softmax. Labels outside [0, C) other than
/// ignore_index throw IndexError.
Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                    const CrossEntropyOptions& options = {});
/// sparse_softmax_cross_entropy's gradient with respect to logits, given dloss = d(total)/d(loss)
/// shaped like labels: (softmax(logits) - one_hot(labels)) * dloss, in one pass over each row and
/// in logits' dtype (computed in float32, rounded once); rows whose label is ignore_index get
/// zero, whatever their dloss. dloss is float32 or bfloat16. The loss's backward pass uses it.
Tensor sparse_softmax_cross_entropy_backprop(const Tensor& logits, const Tensor& labels, const Tensor& dloss,
                                             const CrossEntropyOptions& options = {});

struct LayerNormOptions {
  double epsilon = 1e-3;  ///< Keras's default; BERT uses 1e-12
};
/// (x - mean) / sqrt(var + eps) * gamma + beta over the last axis; gamma and beta are [D].
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const LayerNormOptions& options = {});
/// layer_norm's gradient with respect to x, given dy = d(loss)/d(output) shaped like x: one pass
/// over each row (layer_norm's backward pass uses it). Not differentiable: a gradient of a
/// gradient through layer_norm throws.
Tensor layer_norm_backprop(const Tensor& x, const Tensor& gamma, const Tensor& dy,
                           const LayerNormOptions& options = {});
/// layer_norm's gradient with respect to gamma: the sum over x's rows of dy * xhat, [D] in dy's
/// dtype (float32 sums, rounded once), with xhat = (x - mean) * rstd recomputed, never stored.
/// Not differentiable, as layer_norm_backprop.
Tensor layer_norm_gamma_backprop(const Tensor& x, const Tensor& dy, const LayerNormOptions& options = {});

/// Zeroes each element with probability rate and scales the rest by 1 / (1 - rate). The mask is
/// a pure function of the key (an int64 scalar from random::key_tensor) and the element index.
Tensor dropout(const Tensor& x, double rate, const Tensor& key);

}  // namespace kestrel::ops

namespace kestrel::random {
/// A key as an int64 scalar tensor, the form ops such as dropout take (so a compiled step can
/// receive a new key each step without recompiling).
Tensor key_tensor(const Key& key);
/// The key held by an int64 scalar tensor from key_tensor.
Key key_from_tensor(const Tensor& key);
/// Key::fold_in as an op: key_tensor(key_from_tensor(key).fold_in(data)) for an int64 scalar
/// data, bit for bit. A compiled step folds tensors it receives (the step counter) into keys.
Tensor fold_in(const Tensor& key, const Tensor& data);
}  // namespace kestrel::random
