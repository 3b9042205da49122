// prefetch(n): a background thread runs the upstream pipeline up to n elements ahead, so reading,
// tokenizing and padding overlap the training step.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, std::size_t capacity)
      : input_(std::move(input)), capacity_(capacity), producer_([this] { produce(); }) {}

  // Destroyed mid-pass: tell the producer to stop, wake it if it waits for room, and join.
  ~PrefetchIterator() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    room_.notify_all();
    producer_.join();
  }

  std::optional<Element> next() override {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return !queue_.empty() || finished_; });
    if (queue_.empty()) return std::nullopt;
    Slot slot = std::move(queue_.front());
    queue_.pop_front();
    room_.notify_one();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.element);
  }

 private:
  // An element, or the error producing it threw (rethrown in order on the consumer's thread).
  struct Slot {
    std::optional<Element> element;
    std::exception_ptr error;
  };

  void produce() {
    while (true) {
      Slot slot;
      bool end = false;
      try {
        slot.element = input_->next();
        end = !slot.element;
      } catch (...) {
        slot.error = std::current_exception();
        // Only Kestrel errors leave the input usable (ignore_errors may go on); others end the pass.
        try {
          throw;
        } catch (const Error&) {
        } catch (...) {
          end = true;
        }
      }
      std::unique_lock lock(mutex_);
      if (stopping_) break;
      if (slot.element || slot.error) queue_.push_back(std::move(slot));
      ready_.notify_one();
      if (end) break;
      room_.wait(lock, [this] { return queue_.size() < capacity_ || stopping_; });
      if (stopping_) break;
    }
    std::lock_guard lock(mutex_);
    finished_ = true;
    ready_.notify_all();
  }

  std::unique_ptr<Iterator> input_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable room_;
  std::deque<Slot> queue_;
  bool stopping_ = false;
  bool finished_ = false;
  std::thread producer_;  // last: it starts in the constructor and uses the members above
};

class PrefetchNode final : public detail::UnaryNode {
 public:
  PrefetchNode(std::shared_ptr<const detail::DatasetNode> input, std::int64_t buffer_size)
      : UnaryNode(std::move(input)), buffer_size_(buffer_size) {}
  std::string name() const override { return "prefetch"; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<PrefetchIterator>(input_->make_iterator(), static_cast<std::size_t>(buffer_size_));
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<PrefetchNode>(std::move(input), buffer_size_);
  }

 private:
  std::int64_t buffer_size_;
};

}  // namespace

Dataset Dataset::prefetch(std::int64_t buffer_size) const {
  if (buffer_size < 1) throw ValueError("prefetch: buffer_size must be >= 1, got " + std::to_string(buffer_size));
  return Dataset(std::make_shared<PrefetchNode>(node_, buffer_size));
}

}  // namespace kestrel::data
