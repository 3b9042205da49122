// Transforms that look at one element at a time: map, filter, ignore_errors.
#include <atomic>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"
#include "framework/logging/logging.h"

namespace kestrel::data {
namespace {

class MapNode final : public detail::UnaryNode {
 public:
  MapNode(std::shared_ptr<const detail::DatasetNode> input, std::function<Element(Element)> fn, MapOptions options)
      : UnaryNode(std::move(input)), fn_(std::move(fn)), options_(std::move(options)) {}
  std::string name() const override { return "map"; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  ElementSpec element_spec() const override {
    return options_.output_spec ? *options_.output_spec : DatasetNode::element_spec();
  }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      It(std::unique_ptr<Iterator> input, const std::function<Element(Element)>& fn)
          : input_(std::move(input)), fn_(fn) {}
      std::optional<Element> next() override {
        std::optional<Element> e = input_->next();
        if (!e) return std::nullopt;
        return fn_(std::move(*e));
      }

     private:
      std::unique_ptr<Iterator> input_;
      const std::function<Element(Element)>& fn_;
    };
    return std::make_unique<It>(input_->make_iterator(), fn_);
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<MapNode>(std::move(input), fn_, options_);
  }

 private:
  std::function<Element(Element)> fn_;
  MapOptions options_;
};

class FilterNode final : public detail::UnaryNode {
 public:
  FilterNode(std::shared_ptr<const detail::DatasetNode> input, std::function<bool(const Element&)> predicate)
      : UnaryNode(std::move(input)), predicate_(std::move(predicate)) {}
  std::string name() const override { return "filter"; }
  std::int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality : kUnknownCardinality;
  }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      It(std::unique_ptr<Iterator> input, const std::function<bool(const Element&)>& predicate)
          : input_(std::move(input)), predicate_(predicate) {}
      std::optional<Element> next() override {
        while (std::optional<Element> e = input_->next()) {
          if (predicate_(*e)) return e;
        }
        return std::nullopt;
      }

     private:
      std::unique_ptr<Iterator> input_;
      const std::function<bool(const Element&)>& predicate_;
    };
    return std::make_unique<It>(input_->make_iterator(), predicate_);
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<FilterNode>(std::move(input), predicate_);
  }

 private:
  std::function<bool(const Element&)> predicate_;
};

class IgnoreErrorsNode final : public detail::UnaryNode {
 public:
  using UnaryNode::UnaryNode;
  std::string name() const override { return "ignore_errors"; }
  std::int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality : kUnknownCardinality;
  }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  std::int64_t ignored_errors() const override { return ignored_.load(); }
  std::unique_ptr<Iterator> make_iterator() const override {
    class It final : public Iterator {
     public:
      It(std::unique_ptr<Iterator> input, std::atomic<std::int64_t>& ignored)
          : input_(std::move(input)), ignored_(ignored) {}
      std::optional<Element> next() override {
        while (true) {
          try {
            return input_->next();
          } catch (const Error& error) {
            ++ignored_;
            logging::get("kestrel.data")->warn("ignore_errors: skipped an element: {}", error.what());
          }
        }
      }

     private:
      std::unique_ptr<Iterator> input_;
      std::atomic<std::int64_t>& ignored_;
    };
    return std::make_unique<It>(input_->make_iterator(), ignored_);
  }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<IgnoreErrorsNode>(std::move(input));
  }

 private:
  mutable std::atomic<std::int64_t> ignored_{0};
};

}  // namespace

Dataset Dataset::map(std::function<Element(Element)> fn, MapOptions options) const {
  if (!fn) throw ValueError("map: the function is empty");
  return Dataset(std::make_shared<MapNode>(node_, std::move(fn), std::move(options)));
}

Dataset Dataset::filter(std::function<bool(const Element&)> predicate) const {
  if (!predicate) throw ValueError("filter: the predicate is empty");
  return Dataset(std::make_shared<FilterNode>(node_, std::move(predicate)));
}

Dataset Dataset::ignore_errors() const { return Dataset(std::make_shared<IgnoreErrorsNode>(node_)); }

}  // namespace kestrel::data
