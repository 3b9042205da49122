// Children held under an attribute (Layer::adopt(child, "inner"), as Keras's self.inner = ...):
// Keras 3 weights files group them by the attribute, beside the listed children's layers/<class>.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "framework/saving/keras3_format.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::ChainNet;
using testing::contains;
using testing::error_message;
using testing::ScratchDir;
using testing::TinyDense;

// A listed TinyDense, one held as the part "inner", and another listed one, applied in that order.
class Wrapper : public Layer {
 public:
  Wrapper() : Layer("Wrapper") {
    first_ = &add<TinyDense>(3);
    auto inner = std::make_unique<TinyDense>(3);
    inner_ = inner.get();
    adopt(std::move(inner), "inner");
    last_ = &add<TinyDense>(3);
  }
  Tensor call(const Tensor& x, bool training) override { return (*last_)((*inner_)((*first_)(x, training), training)); }
  TinyDense& first() { return *first_; }
  TinyDense& inner() { return *inner_; }
  TinyDense& last() { return *last_; }

 private:
  TinyDense* first_;
  TinyDense* inner_;
  TinyDense* last_;
};

// Tries to hold a child under `attribute`, after one held under "part".
class Holder : public Layer {
 public:
  explicit Holder(const std::string& attribute) : Layer("Holder", "holder") {
    adopt(std::make_unique<TinyDense>(1), "part");
    adopt(std::make_unique<TinyDense>(1, DType::float32, "second"), attribute);
  }
};

Layer& make_wrapper(ChainNet& net, int /*index*/) { return net.add_layer<Wrapper>(); }

TEST(Keras3ChildAttributes, TheLayerListsItsChildrensAttributes) {
  Wrapper wrapper;
  EXPECT_EQ(wrapper.child_attributes(), (std::vector<std::string>{"", "inner", ""}));
  ASSERT_EQ(wrapper.layers().size(), 3u);
  EXPECT_EQ(wrapper.layers()[1], &wrapper.inner());
  EXPECT_EQ(wrapper.inner().parent(), &wrapper);
  // The attribute names the group; listed children are numbered by class without it.
  EXPECT_EQ(saving::keras3::child_group_names(wrapper),
            (std::vector<std::string>{"layers/tiny_dense", "inner", "layers/tiny_dense_1"}));
}

TEST(Keras3ChildAttributes, ReservedAndRepeatedAttributesAreRefused) {
  for (const char* reserved : {"layers", "vars"}) {
    const std::string message = error_message<ValueError>([&] { Holder holder(reserved); });
    EXPECT_TRUE(contains(message, "layer 'holder' (Holder): cannot hold layer 'second' under the attribute '" +
                                      std::string(reserved) + "': weights files use that group name"))
        << message;
  }
  const std::string message = error_message<ValueError>([] { Holder holder("part"); });
  EXPECT_TRUE(contains(message,
                       "layer 'holder' (Holder): cannot hold layer 'second' under the attribute 'part': "
                       "layer 'tiny_dense"))
      << message;
  EXPECT_TRUE(contains(message, "already holds it")) << message;
}

TEST(Keras3ChildAttributes, FilesGroupTheChildUnderItsAttribute) {
  if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
  ScratchDir dir;
  ChainNet saved(1, make_wrapper);
  saved.build({1, 2});
  auto& wrapper = dynamic_cast<Wrapper&>(*saved.layers()[0]);
  wrapper.first().kernel().assign(Tensor::full({2, 3}, 1.0));
  wrapper.inner().kernel().assign(Tensor::full({3, 3}, 2.0));
  wrapper.last().kernel().assign(Tensor::full({3, 3}, 3.0));
  saved.save_weights(dir.file("w.weights.h5"));
  const std::string out = testing::run_python(dir, R"PY(
import sys, h5py, numpy as np
def visit(name, obj):
    if isinstance(obj, h5py.Dataset): print('D', obj.name, obj.shape, 'first=%g' % np.asarray(obj[()]).reshape(-1)[0])
    else: print('G', obj.name)
with h5py.File(sys.argv[1], 'r') as f:
    f.visititems(visit)
)PY",
                                              dir.file("w.weights.h5"));
  for (const char* line : {
           "D /layers/wrapper/layers/tiny_dense/vars/0 (2, 3) first=1\n",
           "D /layers/wrapper/inner/vars/0 (3, 3) first=2\n",
           "D /layers/wrapper/inner/vars/1 (3,)",
           "D /layers/wrapper/layers/tiny_dense_1/vars/0 (3, 3) first=3\n",
       }) {
    EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
  }
  EXPECT_FALSE(contains(out, "/layers/wrapper/layers/inner")) << out;
  EXPECT_FALSE(contains(out, "/layers/wrapper/layers/tiny_dense_2")) << out;

  ChainNet loaded(1, make_wrapper);
  loaded.build({1, 2});
  loaded.load_weights(dir.file("w.weights.h5"));
  testing::expect_same_weights(saved, loaded);
  auto& read = dynamic_cast<Wrapper&>(*loaded.layers()[0]);
  EXPECT_EQ(read.inner().kernel().value().to_vector<float>(), std::vector<float>(9, 2.0f));
}

}  // namespace
}  // namespace kestrel
