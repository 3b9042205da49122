#include "framework/layers/merging.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/dense.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/keras_tensor.h"
#include "framework/model/functional_graph.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"
#include "tests/framework/layers/compiled_layer_util.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

Tensor rows(const std::vector<float>& values, const Shape& shape) { return Tensor::from_vector(values, shape); }

// Three [2,3] inputs with small exact values.
const Tensor& a() {
  static const Tensor t = rows({1, -2, 3, 4, 5, -6}, {2, 3});
  return t;
}
const Tensor& b() {
  static const Tensor t = rows({2, 2, 2, -1, 0, 1}, {2, 3});
  return t;
}
const Tensor& c() {
  static const Tensor t = rows({0, 1, -1, 3, -3, 0}, {2, 3});
  return t;
}

std::vector<Tensor> normals(const std::vector<Shape>& shapes, std::uint64_t seed) {
  std::vector<Tensor> out;
  for (const Shape& shape : shapes) out.push_back(random::normal(shape, random::Key(seed++)));
  return out;
}

// One of each element-wise layer, by Keras class name.
std::unique_ptr<layers::Merge> make_merge(const std::string& class_name) {
  if (class_name == "Add") return std::make_unique<layers::Add>();
  if (class_name == "Subtract") return std::make_unique<layers::Subtract>();
  if (class_name == "Multiply") return std::make_unique<layers::Multiply>();
  if (class_name == "Average") return std::make_unique<layers::Average>();
  if (class_name == "Maximum") return std::make_unique<layers::Maximum>();
  return std::make_unique<layers::Minimum>();
}
const std::vector<std::string> kMergeClasses = {"Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"};

// first, first + 1, ... in this shape.
Tensor counting(float first, const Shape& shape) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = first + static_cast<float>(i);
  return Tensor::from_vector(values, shape);
}

void expect_near(const Tensor& actual, const std::vector<float>& expected) {
  const std::vector<float> v = actual.to_vector<float>();
  ASSERT_EQ(v.size(), expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], 1e-6) << "element " << i;
}

TEST(Merging, KerasClassAndDefaultNames) {
  clear_session();
  EXPECT_EQ(layers::Add().name(), "add");
  EXPECT_EQ(layers::Add().name(), "add_1");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Add", "add_2"},       {"Subtract", "subtract"}, {"Multiply", "multiply"},
      {"Average", "average"}, {"Maximum", "maximum"},   {"Minimum", "minimum"},
  };
  for (const auto& [class_name, name] : expected) {
    const std::unique_ptr<layers::Merge> layer = make_merge(class_name);
    EXPECT_EQ(layer->class_name(), class_name);
    EXPECT_EQ(layer->name(), name);
  }
  layers::Concatenate concatenate;
  EXPECT_EQ(concatenate.class_name(), "Concatenate");
  EXPECT_EQ(concatenate.name(), "concatenate");
  EXPECT_EQ(concatenate.axis(), -1);
  EXPECT_EQ(layers::Concatenate({.axis = 1, .name = "join"}).name(), "join");
  EXPECT_EQ(layers::Add({.name = "residual"}).name(), "residual");

  layers::Multiply multiply;
  multiply(std::vector<Tensor>{a(), b()});
  EXPECT_TRUE(multiply.built());
  EXPECT_EQ(multiply.count_params(), 0);
  EXPECT_EQ(multiply.last_output_shape(), Shape({2, 3}));
}

TEST(Merging, ElementWiseValuesOnSmallInputs) {
  const std::vector<Tensor> three{a(), b(), c()};
  EXPECT_EQ(layers::Add()(three).to_vector<float>(), (std::vector<float>{3, 1, 4, 6, 2, -5}));
  EXPECT_EQ(layers::Subtract()({a(), b()}).to_vector<float>(), (std::vector<float>{-1, -4, 1, 5, 5, -7}));
  EXPECT_EQ(layers::Multiply()(three).to_vector<float>(), (std::vector<float>{0, -4, -6, -12, 0, 0}));
  EXPECT_EQ(layers::Average()({a(), b()}).to_vector<float>(), (std::vector<float>{1.5, 0, 2.5, 1.5, 2.5, -2.5}));
  expect_near(layers::Average()(three), {1, 1.F / 3, 4.F / 3, 2, 2.F / 3, -5.F / 3});
  EXPECT_EQ(layers::Maximum()(three).to_vector<float>(), (std::vector<float>{2, 2, 3, 4, 5, 1}));
  EXPECT_EQ(layers::Minimum()(three).to_vector<float>(), (std::vector<float>{0, -2, -1, -1, -3, -6}));
  for (const std::string& class_name : kMergeClasses) {
    const Tensor y = (*make_merge(class_name))({a(), b()});
    EXPECT_EQ(y.shape(), Shape({2, 3})) << class_name;
    EXPECT_EQ(y.dtype(), DType::float32) << class_name;
  }
}

TEST(Merging, IntegerInputsKeepTheirDtypeExceptInAverage) {
  const Tensor i = Tensor::from_vector<std::int32_t>({1, 2, 3}, {3, 1});
  const Tensor j = Tensor::from_vector<std::int32_t>({2, 2, 6}, {3, 1});
  const Tensor sum = layers::Add()({i, j});
  EXPECT_EQ(sum.dtype(), DType::int32);
  EXPECT_EQ(sum.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 4, 9}));
  // Keras's true division: a float32 mean, not a truncated integer one.
  const Tensor mean = layers::Average()({i, j});
  EXPECT_EQ(mean.dtype(), DType::float32);
  EXPECT_EQ(mean.to_vector<float>(), (std::vector<float>{1.5, 2, 4.5}));
}

TEST(Concatenate, JoinsAlongTheAxis) {
  const Tensor last = layers::Concatenate()({a(), b()});
  EXPECT_EQ(last.shape(), Shape({2, 6}));
  EXPECT_EQ(last.to_vector<float>(), (std::vector<float>{1, -2, 3, 2, 2, 2, 4, 5, -6, -1, 0, 1}));
  const Tensor batch = layers::Concatenate({.axis = 0})({a(), b(), c()});
  EXPECT_EQ(batch.shape(), Shape({6, 3}));
  EXPECT_EQ(batch.to_vector<float>(), (std::vector<float>{1, -2, 3, 4, 5, -6, 2, 2, 2, -1, 0, 1, 0, 1, -1, 3, -3, 0}));
  // Keras's docstring example: [2,2,5] and [2,1,5] along axis 1.
  const Tensor x = counting(0, {2, 2, 5});
  const Tensor y = counting(20, {2, 1, 5});
  const Tensor z = layers::Concatenate({.axis = 1})({x, y});
  EXPECT_EQ(z.shape(), Shape({2, 3, 5}));
  EXPECT_EQ(ops::slice(z, {0, 2, 0}, {1, 1, 5}).to_vector<float>(), (std::vector<float>{20, 21, 22, 23, 24}));
  EXPECT_EQ(ops::slice(z, {1, 0, 0}, {1, 1, 5}).to_vector<float>(), (std::vector<float>{10, 11, 12, 13, 14}));
  EXPECT_EQ(layers::Concatenate({.axis = -2})({x, y}).to_vector<float>(), z.to_vector<float>());
}

TEST(Merging, SizeOneAxesBroadcastAsKerasAllows) {
  // [2,3] with a per-sample scalar [2,1].
  const Tensor column = rows({10, 20}, {2, 1});
  EXPECT_EQ(layers::Add()({a(), column}).to_vector<float>(), (std::vector<float>{11, 8, 13, 24, 25, 14}));
  EXPECT_EQ(layers::Maximum()({column, a(), b()}).shape(), Shape({2, 3}));
  // Both sides broadcast: [2,1,4] - [2,3,1] -> [2,3,4].
  const std::vector<Tensor> xs = normals({{2, 1, 4}, {2, 3, 1}}, 1);
  const Tensor difference = layers::Subtract()(xs);
  EXPECT_EQ(difference.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(difference.to_vector<float>(), ops::subtract(xs[0], xs[1]).to_vector<float>());
  // A batch of 1 broadcasts too: it is what a Keras tensor of any batch has.
  EXPECT_EQ(layers::Multiply()({rows({1, 2, 3}, {1, 3}), a()}).to_vector<float>(),
            (std::vector<float>{1, -4, 9, 4, 10, -18}));
}

TEST(Merging, ALowerRankInputGainsAxesAfterItsBatchDim) {
  // Keras's Merge expands [N,4] to [N,1,4], which differs from NumPy's [1,N,4] when N > 1.
  const std::vector<Tensor> xs = normals({{2, 4}, {2, 2, 4}}, 3);
  const Tensor sum = layers::Add()(xs);
  EXPECT_EQ(sum.shape(), Shape({2, 2, 4}));
  EXPECT_EQ(sum.to_vector<float>(), ops::add(ops::reshape(xs[0], {2, 1, 4}), xs[1]).to_vector<float>());
  const Tensor product = layers::Multiply()({xs[1], xs[0], rows({2, 3}, {2, 1})});
  EXPECT_EQ(
      product.to_vector<float>(),
      ops::multiply(ops::multiply(xs[1], ops::reshape(xs[0], {2, 1, 4})), rows({2, 3}, {2, 1, 1})).to_vector<float>());

  clear_session();
  const Tensor sequence = Input({3, 4}, {.name = "sequence"});
  const Tensor vector = Input({4}, {.name = "vector"});
  const Tensor merged = layers::Add()({sequence, vector});
  EXPECT_TRUE(functional::is_keras_tensor(merged));
  EXPECT_EQ(merged.shape(), Shape({1, 3, 4}));
  // The model runs on any batch, each sample's vector added to each of its steps.
  Model model({sequence, vector}, merged);
  const Tensor steps = random::normal({2, 3, 4}, random::Key(5));
  const Tensor per_sample = random::normal({2, 4}, random::Key(6));
  EXPECT_EQ(model(Inputs{{"sequence", steps}, {"vector", per_sample}}).to_vector<float>(),
            ops::add(steps, ops::reshape(per_sample, {2, 1, 4})).to_vector<float>());
}

TEST(Merging, GradientsOfEachInput) {
  const std::vector<Tensor> same = normals({{2, 3}, {2, 3}, {2, 3}}, 10);
  for (const std::string& class_name : kMergeClasses) {
    const std::unique_ptr<layers::Merge> layer = make_merge(class_name);
    const std::vector<Tensor> inputs = class_name == "Subtract" ? std::vector<Tensor>{same[0], same[1]} : same;
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& xs) { return (*layer)(xs); }, inputs);
    EXPECT_TRUE(r.ok) << class_name << ": " << r.report;
  }
  // The gradient of a broadcast input sums over the axes it was broadcast along.
  const std::vector<Tensor> broadcast = normals({{2, 3, 4}, {2, 4}, {2, 1, 1}}, 20);
  for (const char* class_name : {"Add", "Multiply", "Average", "Maximum", "Minimum"}) {
    const std::unique_ptr<layers::Merge> layer = make_merge(class_name);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& xs) { return (*layer)(xs); }, broadcast);
    EXPECT_TRUE(r.ok) << class_name << " broadcasting: " << r.report;
  }
  for (const int axis : {-1, 0}) {
    layers::Concatenate concatenate({.axis = axis});
    const std::vector<Tensor> xs =
        normals(axis == 0 ? std::vector<Shape>{{2, 3}, {1, 3}} : std::vector<Shape>{{2, 3}, {2, 2}, {2, 1}}, 30);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return concatenate(in); }, xs);
    EXPECT_TRUE(r.ok) << "Concatenate axis " << axis << ": " << r.report;
  }
}

TEST(Merging, CompiledEqualsEager) {
  const std::vector<Tensor> same = normals({{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}, 40);
  const std::vector<Tensor> broadcast = normals({{2, 3, 4}, {2, 4}, {2, 3, 1}}, 50);
  for (const std::string& class_name : kMergeClasses) {
    const bool two = class_name == "Subtract";
    testing::expect_compiled_matches_eager(*make_merge(class_name), two ? std::vector<Tensor>{same[0], same[1]} : same);
    testing::expect_compiled_matches_eager(*make_merge(class_name),
                                           two ? std::vector<Tensor>{broadcast[0], broadcast[1]} : broadcast);
  }
  layers::Concatenate along_steps({.axis = 1});
  testing::expect_compiled_matches_eager(along_steps, normals({{2, 3, 4}, {2, 1, 4}}, 60));
  layers::Concatenate along_features;
  testing::expect_compiled_matches_eager(along_features, normals({{2, 3, 4}, {2, 3, 2}}, 70));
}

TEST(Merging, ComputeInTheBfloat16Policy) {
  // The layer call casts floating inputs to the compute dtype; Keras's merging layers add nothing.
  const Tensor sum = layers::Add({.dtype = "mixed_bfloat16"})({a(), b()});
  EXPECT_EQ(sum.dtype(), DType::bfloat16);
  EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{3, 0, 5, 3, 5, -5}));
  const Tensor joined = layers::Concatenate({.dtype = "mixed_bfloat16"})({a(), ops::cast(b(), DType::bfloat16)});
  EXPECT_EQ(joined.dtype(), DType::bfloat16);
  EXPECT_EQ(joined.to_vector<float>(), layers::Concatenate()({a(), b()}).to_vector<float>());
  // Under float32, a bfloat16 input is cast up before merging.
  const Tensor mixed = layers::Maximum()({ops::cast(a(), DType::bfloat16), b()});
  EXPECT_EQ(mixed.dtype(), DType::float32);
  EXPECT_EQ(mixed.to_vector<float>(), (std::vector<float>{2, 2, 3, 4, 5, 1}));
}

TEST(Merging, AFunctionalModelWithAResidualAddAndAConcatenate) {
  clear_session();
  // The weights draw from the global stream: put it back afterwards, so later tests start where they would.
  const testing::GlobalRandomStreamGuard stream;
  random::set_global_seed(11);
  const Tensor features = Input({4}, {.name = "features"});
  const Tensor extra = Input({3}, {.name = "extra"});
  layers::Dense branch(4, {.activation = "relu"});
  layers::Dense side(2);
  layers::Dense head(1);
  const Tensor residual = layers::Add()({branch(features), features});
  const Tensor joined = layers::Concatenate()({residual, side(extra)});
  EXPECT_EQ(residual.shape(), Shape({1, 4}));
  EXPECT_EQ(joined.shape(), Shape({1, 6}));
  Model model({features, extra}, head(joined));

  const std::vector<Layer*> listed = model.layers();
  std::vector<std::string> names;
  for (const Layer* layer : listed) names.push_back(layer->name());
  EXPECT_EQ(names,
            (std::vector<std::string>{"features", "extra", "dense", "add", "dense_1", "concatenate", "dense_2"}));
  EXPECT_EQ(model.functional_graph()->connected_to(*listed[3]),
            (std::vector<std::string>{"dense[0][0]", "features[0][0]"}));
  EXPECT_EQ(model.functional_graph()->connected_to(*listed[5]),
            (std::vector<std::string>{"add[0][0]", "dense_1[0][0]"}));
  EXPECT_EQ(model.count_params(), (4 * 4 + 4) + (3 * 2 + 2) + (6 + 1));

  const Tensor xf = random::normal({5, 4}, random::Key(1));
  const Tensor xe = random::normal({5, 3}, random::Key(2));
  const Tensor y = model(Inputs{{"features", xf}, {"extra", xe}});
  ASSERT_EQ(y.shape(), Shape({5, 1}));

  const Tensor hidden = ops::relu(ops::add(ops::matmul(xf, branch.kernel().value()), branch.bias().value()));
  const Tensor side_out = ops::add(ops::matmul(xe, side.kernel().value()), side.bias().value());
  const Tensor by_hand = ops::add(ops::matmul(ops::concat({ops::add(hidden, xf), side_out}, -1), head.kernel().value()),
                                  head.bias().value());
  const std::vector<float> expected = by_hand.to_vector<float>();
  const std::vector<float> actual = y.to_vector<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << "row " << i;
}

TEST(MergingErrors, TooFewOrTooManyInputsAndSingleTensors) {
  clear_session();
  std::string m = error_message<ValueError>([] { layers::Add()(std::vector<Tensor>{a()}); });
  EXPECT_TRUE(contains(m, "layer 'add' (Add): called on 1 input; Add merges a list of at least 2 tensors")) << m;
  EXPECT_TRUE(contains(m, "pass them in one call, as layer({a, b})")) << m;

  m = error_message<ValueError>([] { layers::Subtract()({a(), b(), c()}); });
  EXPECT_TRUE(contains(m, "(Subtract): called on 3 inputs; Subtract takes exactly 2")) << m;
  EXPECT_TRUE(contains(m, "subtract in steps")) << m;
  m = error_message<ValueError>([] { layers::Subtract()(std::vector<Tensor>{a()}); });
  EXPECT_TRUE(contains(m, "called on 1 input; Subtract takes exactly 2")) << m;

  m = error_message<ValueError>([] { layers::Concatenate()(std::vector<Tensor>{a()}); });
  EXPECT_TRUE(contains(m, "(Concatenate): called on 1 input; Concatenate merges a list of at least 2")) << m;

  layers::Maximum maximum({.name = "max"});
  m = error_message<ValueError>([&] { maximum(a()); });
  EXPECT_TRUE(contains(m, "layer 'max' (Maximum): called on one tensor [2,3]; Maximum takes a list of tensors")) << m;
  EXPECT_FALSE(maximum.built());
  m = error_message<ValueError>([] { layers::Concatenate()(a()); });
  EXPECT_TRUE(contains(m, "(Concatenate): called on one tensor [2,3]")) << m;

  m = error_message<ShapeError>([] { layers::Add()({Tensor::scalar(1.0), Tensor::scalar(2.0)}); });
  EXPECT_TRUE(contains(m, "(Add): input 0 is a scalar (inputs [] and [])")) << m;
  EXPECT_TRUE(contains(m, "need a batch dim first")) << m;
}

TEST(MergingErrors, ShapesThatDoNotMergeNameTheLayerTheShapesAndTheFix) {
  clear_session();
  layers::Add add;
  std::string m = error_message<ShapeError>([&] { add({a(), Tensor::ones({2, 4})}); });
  EXPECT_TRUE(contains(m, "layer 'add' (Add): inputs have shapes [2,3] and [2,4], which do not merge")) << m;
  EXPECT_TRUE(contains(m, "axis 1 has sizes 3 and 4")) << m;
  EXPECT_TRUE(contains(m, "or 1 on one side to broadcast")) << m;
  EXPECT_TRUE(contains(m, "layers::Concatenate")) << m;

  m = error_message<ShapeError>([] { layers::Multiply()({Tensor::ones({2, 3, 4}), a(), b()}); });
  EXPECT_TRUE(contains(m, "inputs have shapes [2,3,4], [2,3] and [2,3]")) << m;
  EXPECT_TRUE(contains(m, "axis 2 has sizes 4 and 3 (an input of lower rank gains size-1 axes after its batch dim)"))
      << m;

  m = error_message<ShapeError>([] { layers::Average()({a(), Tensor::ones({3, 3})}); });
  EXPECT_TRUE(contains(m, "axis 0 has sizes 2 and 3")) << m;

  // A built layer checks each call too: later calls do not build again.
  layers::Minimum minimum;
  minimum({a(), b()});
  m = error_message<ShapeError>([&] { minimum({a(), Tensor::ones({2, 5})}); });
  EXPECT_TRUE(contains(m, "layer 'minimum' (Minimum): inputs have shapes [2,3] and [2,5]")) << m;

  m = error_message<TypeError>([] { layers::Add()({a(), Tensor::ones({2, 3}, DType::int32)}); });
  EXPECT_TRUE(contains(m, "(Add): inputs have dtypes float32 and int32; Add needs one dtype")) << m;
  EXPECT_TRUE(contains(m, "ops::cast")) << m;

  // On Keras tensors the check runs while the call is recorded.
  const Tensor three = Input({3});
  const Tensor four = Input({4});
  m = error_message<ShapeError>([&] { layers::Subtract({.name = "delta"})({three, four}); });
  EXPECT_TRUE(contains(m, "layer 'delta' (Subtract): inputs have shapes [1,3] and [1,4]")) << m;
}

TEST(MergingErrors, ConcatenateRanksAxisAndSizes) {
  clear_session();
  layers::Concatenate concatenate;
  std::string m = error_message<ShapeError>([&] { concatenate({a(), Tensor::ones({2, 3, 1})}); });
  EXPECT_TRUE(
      contains(m, "layer 'concatenate' (Concatenate): inputs have shapes [2,3] and [2,3,1], of different ranks"))
      << m;
  EXPECT_TRUE(contains(m, "layers::Reshape")) << m;

  m = error_message<ValueError>([] { layers::Concatenate({.axis = 2})({a(), b()}); });
  EXPECT_TRUE(contains(m, "(Concatenate): axis 2 is outside inputs of rank 2 (shapes [2,3] and [2,3])")) << m;
  EXPECT_TRUE(contains(m, "choose an axis from -2 to 1")) << m;
  m = error_message<ValueError>([] { layers::Concatenate({.axis = -3})({a(), b()}); });
  EXPECT_TRUE(contains(m, "axis -3 is outside inputs of rank 2")) << m;

  m = error_message<ShapeError>([] { layers::Concatenate()({Tensor::ones({2, 3, 4}), Tensor::ones({2, 5, 4})}); });
  EXPECT_TRUE(contains(m, "inputs have shapes [2,3,4] and [2,5,4], which cannot be joined along axis -1")) << m;
  EXPECT_TRUE(contains(m, "axis 1 has sizes 3 and 5")) << m;
  EXPECT_TRUE(contains(m, "or join along the axis where the shapes differ")) << m;
  // Keras's own test case: along axis 1, axis 3 differs.
  m = error_message<ShapeError>([] {
    layers::Concatenate({.axis = 1})({Tensor::ones({1, 2, 1, 2, 1}), Tensor::ones({1, 1, 1, 3, 1})});
  });
  EXPECT_TRUE(contains(m, "axis 3 has sizes 2 and 3")) << m;

  m = error_message<TypeError>([] { layers::Concatenate()({a(), Tensor::ones({2, 3}, DType::int32)}); });
  EXPECT_TRUE(contains(m, "(Concatenate): inputs have dtypes float32 and int32")) << m;
}

}  // namespace
}  // namespace kestrel
