// with_options: attaches tf.data-style Options to a pipeline without changing its elements.
#include "framework/data/dataset_node.h"

namespace kestrel::data {
namespace {

class OptionsNode final : public detail::UnaryNode {
 public:
  OptionsNode(std::shared_ptr<const detail::DatasetNode> input, Options options)
      : UnaryNode(std::move(input)), options_(options) {}
  std::string name() const override { return "with_options"; }
  std::int64_t cardinality() const override { return input_->cardinality(); }
  ElementSpec element_spec() const override { return input_->element_spec(); }
  const Options* options() const override { return &options_; }
  std::unique_ptr<Iterator> make_iterator() const override { return input_->make_iterator(); }
  std::shared_ptr<const DatasetNode> with_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<OptionsNode>(std::move(input), options_);
  }

 private:
  Options options_;
};

}  // namespace

Dataset Dataset::with_options(Options options) const { return Dataset(std::make_shared<OptionsNode>(node_, options)); }

Options Dataset::options() const {
  // The outermost with_options wins, as a later tf.data with_options overrides an earlier one.
  for (const detail::DatasetNode* n = node_.get(); n != nullptr; n = n->input()) {
    if (const Options* options = n->options()) return *options;
  }
  return {};
}

}  // namespace kestrel::data
