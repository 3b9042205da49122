#include "framework/data/dataset.h"

#include <set>

#include "framework/core/error.h"
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace detail {
namespace {
thread_local bool probing_now = false;
}  // namespace

bool probing() { return probing_now; }

ProbeScope::ProbeScope() : previous_(probing_now) { probing_now = true; }

ProbeScope::~ProbeScope() { probing_now = previous_; }

ElementSpec DatasetNode::element_spec() const {
  ProbeScope probe;
  std::optional<Element> first = make_iterator()->next();
  if (!first) return {};
  return first->spec();
}

}  // namespace detail

namespace {

// Keeps the pipeline alive while an iterator over it exists, even when the Dataset value is gone.
class OwningIterator final : public Iterator {
 public:
  OwningIterator(std::shared_ptr<const detail::DatasetNode> node)
      : node_(std::move(node)), iterator_(node_->make_iterator()) {}
  std::optional<Element> next() override { return iterator_->next(); }

 private:
  std::shared_ptr<const detail::DatasetNode> node_;
  std::unique_ptr<Iterator> iterator_;
};

}  // namespace

Dataset::Dataset(std::shared_ptr<const detail::DatasetNode> node) : node_(std::move(node)) {
  KESTREL_DCHECK(node_ != nullptr);
}

ElementSpec Dataset::element_spec() const { return node_->element_spec(); }

std::int64_t Dataset::cardinality() const { return node_->cardinality(); }

PaddingReport Dataset::padding_stats() const {
  std::set<std::string> shapes;
  PaddingReport report;
  for (const detail::DatasetNode* n = node_.get(); n != nullptr; n = n->input()) {
    if (const PaddingStats* stats = n->padding_stats()) stats->merge_into(shapes, report);
  }
  report.distinct_shapes = static_cast<std::int64_t>(shapes.size());
  return report;
}

void Dataset::reset_padding_stats() const {
  for (const detail::DatasetNode* n = node_.get(); n != nullptr; n = n->input()) {
    // The tallies are the pipeline's bookkeeping, not its value: resetting them is allowed on a const Dataset.
    if (const PaddingStats* stats = n->padding_stats()) const_cast<PaddingStats*>(stats)->reset();
  }
}

std::int64_t Dataset::ignored_errors() const {
  std::int64_t total = 0;
  for (const detail::DatasetNode* n = node_.get(); n != nullptr; n = n->input()) total += n->ignored_errors();
  return total;
}

std::string Dataset::describe() const {
  std::string out;
  for (const detail::DatasetNode* n = node_.get(); n != nullptr; n = n->input()) {
    out = n->name() + (out.empty() ? "" : " -> ") + out;
  }
  return out;
}

std::unique_ptr<Iterator> Dataset::make_iterator() const { return std::make_unique<OwningIterator>(node_); }

std::vector<Element> Dataset::to_vector() const {
  if (cardinality() == kInfiniteCardinality) {
    throw ValueError("to_vector: the dataset (" + describe() + ") is infinite; take(n) first");
  }
  std::vector<Element> out;
  auto it = make_iterator();
  while (std::optional<Element> e = it->next()) out.push_back(std::move(*e));
  return out;
}

Dataset::RangeIterator::RangeIterator(std::shared_ptr<Iterator> it) : it_(std::move(it)) { ++*this; }

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  current_ = it_->next();
  return *this;
}

}  // namespace kestrel::data
