// LMHead: a language model's output projection, hidden vectors to vocabulary logits, as Hugging
// Face's lm_head (a bias-free Linear whose weight is [vocab_size, hidden]).
//
//   models::LMHead head(/*vocab_size=*/8192, {.name = "lm_head"});
//   Tensor logits = head(h);                                  // h [B, L, 256] -> [B, L, 8192]
//   head.kernel().tie_to(embedding.embeddings());             // the output is the input embedding
//
// The kernel is stored as an embedding table is, [vocab_size, hidden] (row v is token v's vector),
// and used transposed, so it can be tied to the token embedding: logits = h · kernelᵀ. A head
// that will be tied starts at zero (`initializer`), as its own values are dropped by the tie.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/layers/initializers.h"
#include "framework/layers/layer.h"

namespace kestrel::models {

struct LMHeadOptions {
  Initializer kernel_initializer = "glorot_uniform";
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class LMHead : public Layer {
 public:
  /// Logits over vocab_size tokens (positive).
  explicit LMHead(std::int64_t vocab_size, LMHeadOptions options = {});

  /// Creates the kernel [vocab_size, input_shape[-1]].
  void build(const Shape& input_shape) override;
  /// h [..., hidden] -> [..., vocab_size].
  Tensor call(const Tensor& h, bool training) override;

  std::int64_t vocab_size() const { return vocab_size_; }
  /// The kernel [vocab_size, hidden]; undefined until built.
  const Variable& kernel() const { return kernel_; }

 private:
  std::int64_t vocab_size_;
  LMHeadOptions options_;
  Variable kernel_;
};

}  // namespace kestrel::models
