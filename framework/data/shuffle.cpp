// shuffle(buffer_size, seed): tf.data's buffered shuffle, with Kestrel's counter-based RNG so the
// order is a pure function of the seed and the pass number.
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

class ShuffleNode final : public detail::UnaryNode {
 public:
  ShuffleNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t buffer_size, random::Key key,
              ShuffleOptions options)
      : UnaryNode(std::move(input)), buffer_size_(buffer_size), key_(key), options_(options) {}
  std::string name() const override { return "shuffle"; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    const std::uint64_t pass = passes_.next();
    const random::Key key = key_.fold_in(options_.reshuffle_each_iteration ? pass : 0);
    return std::make_unique<It>(input_->make_iterator(), buffer_size_, key);
  }
  // The same key with a new pass counter: the copy's first pass has the original's first order.
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<ShuffleNode>(std::move(input), buffer_size_, key_, options_);
  }

 private:
  // Keeps a buffer full from the input and emits a uniformly chosen buffered element each step.
  class It final : public Iterator {
   public:
    It(std::unique_ptr<Iterator> input, std::int64_t buffer_size, random::Key key)
        : input_(std::move(input)), buffer_size_(static_cast<std::size_t>(buffer_size)), key_(key) {}
    std::optional<Element> next() override {
      while (!input_done_ && buffer_.size() < buffer_size_) {
        std::optional<Element> e = input_->next();
        if (!e) {
          input_done_ = true;
          break;
        }
        buffer_.push_back(std::move(*e));
      }
      if (buffer_.empty()) return std::nullopt;
      const std::size_t pick = uniform_index(buffer_.size());
      Element out = std::move(buffer_[pick]);
      buffer_[pick] = std::move(buffer_.back());
      buffer_.pop_back();
      return out;
    }

   private:
    // A float draw has 24 bits, too few to reach every slot of a large buffer evenly: two draws
    // make a 48-bit number, whose remainder is uniform to within size / 2^48.
    std::size_t uniform_index(std::size_t size) {
      const auto high = static_cast<std::uint64_t>(random::uniform_at(key_, draws_++) * 16777216.0f);
      const auto low = static_cast<std::uint64_t>(random::uniform_at(key_, draws_++) * 16777216.0f);
      return static_cast<std::size_t>(((high << 24) | low) % size);
    }

    std::unique_ptr<Iterator> input_;
    std::size_t buffer_size_;
    random::Key key_;
    std::uint64_t draws_ = 0;
    std::vector<Element> buffer_;
    bool input_done_ = false;
  };

  std::int64_t buffer_size_;
  random::Key key_;
  ShuffleOptions options_;
  detail::PassCounter passes_;
};

}  // namespace

Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed, ShuffleOptions options) const {
  if (buffer_size < 1) {
    throw ValueError("shuffle: buffer_size must be >= 1, got " + std::to_string(buffer_size) +
                     " (use the dataset size for a full shuffle)");
  }
  // Without a seed, draw one from the global stream: random::set_global_seed still fixes the order.
  const random::Key key = seed ? random::Key(*seed) : random::next_global_key();
  return Dataset(std::make_shared<ShuffleNode>(node_, buffer_size, key, options));
}

}  // namespace kestrel::data
