// Transforms that choose which elements pass: repeat, take, skip, shard.
#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

class RepeatNode final : public detail::UnaryNode {
 public:
  RepeatNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t count)
      : UnaryNode(std::move(input)), count_(count) {}
  std::string name() const override { return "repeat"; }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n == 0 || count_ == 0) return 0;
    if (count_ < 0 || n == kInfiniteCardinality) return kInfiniteCardinality;
    return n == kUnknownCardinality ? kUnknownCardinality : n * count_;
  }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      It(const DatasetNode& input, std::int64_t count) : input_(input), count_(count) {}
      std::optional<Element> next() override {
        while (count_ < 0 || pass_ < count_) {
          if (!current_) {
            current_ = input_.make_iterator();
            produced_ = false;
          }
          if (std::optional<Element> e = current_->next()) {
            produced_ = true;
            return e;
          }
          current_.reset();
          ++pass_;
          if (!produced_) break;  // an empty input would otherwise repeat forever
        }
        return std::nullopt;
      }

     private:
      const DatasetNode& input_;
      std::int64_t count_;
      std::int64_t pass_ = 0;
      bool produced_ = false;
      std::unique_ptr<Iterator> current_;
    };
    return std::make_unique<It>(*input_, count_);
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<RepeatNode>(std::move(input), count_);
  }

 private:
  std::int64_t count_;
};

// take, skip and shard: a stride over the input's elements.
class StrideNode final : public detail::UnaryNode {
 public:
  StrideNode(std::shared_ptr<const detail::DatasetNode> input, std::string name, std::int64_t first, std::int64_t step,
             std::int64_t limit)
      : UnaryNode(std::move(input)), name_(std::move(name)), first_(first), step_(step), limit_(limit) {}
  std::string name() const override { return name_; }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n == kUnknownCardinality) return limit_ == 0 ? 0 : kUnknownCardinality;
    if (n == kInfiniteCardinality) return limit_ >= 0 ? limit_ : kInfiniteCardinality;
    const std::int64_t strided = n <= first_ ? 0 : (n - first_ + step_ - 1) / step_;
    return limit_ >= 0 ? std::min(strided, limit_) : strided;
  }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      It(std::unique_ptr<Iterator> input, const StrideNode& node) : input_(std::move(input)), node_(node) {}
      std::optional<Element> next() override {
        if (node_.limit_ >= 0 && emitted_ >= node_.limit_) return std::nullopt;
        while (std::optional<Element> e = input_->next()) {
          const std::int64_t i = position_++;
          if (i < node_.first_ || (i - node_.first_) % node_.step_ != 0) continue;
          ++emitted_;
          return e;
        }
        return std::nullopt;
      }

     private:
      std::unique_ptr<Iterator> input_;
      const StrideNode& node_;
      std::int64_t position_ = 0;
      std::int64_t emitted_ = 0;
    };
    return std::make_unique<It>(input_->make_iterator(), *this);
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<StrideNode>(std::move(input), name_, first_, step_, limit_);
  }

 private:
  std::string name_;
  std::int64_t first_;
  std::int64_t step_;
  std::int64_t limit_;  // -1: no limit
};

}  // namespace

Dataset Dataset::repeat(std::int64_t count) const {
  if (count < -1) throw ValueError("repeat: count must be >= 0, or -1 to repeat forever; got " + std::to_string(count));
  return Dataset(std::make_shared<RepeatNode>(node_, count));
}

Dataset Dataset::take(std::int64_t count) const {
  if (count < -1) throw ValueError("take: count must be >= 0, or -1 for all; got " + std::to_string(count));
  return Dataset(std::make_shared<StrideNode>(node_, "take", 0, 1, count));
}

Dataset Dataset::skip(std::int64_t count) const {
  if (count < 0) throw ValueError("skip: count must be >= 0; got " + std::to_string(count));
  return Dataset(std::make_shared<StrideNode>(node_, "skip", count, 1, -1));
}

Dataset Dataset::shard(std::int64_t num_shards, std::int64_t index) const {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    throw ValueError("shard: need num_shards >= 1 and 0 <= index < num_shards; got num_shards=" +
                     std::to_string(num_shards) + ", index=" + std::to_string(index));
  }
  return Dataset(std::make_shared<StrideNode>(node_, "shard", index, num_shards, -1));
}

}  // namespace kestrel::data
