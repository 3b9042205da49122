// Optimizers and learning-rate schedules as Keras 3 configs: the keys Keras writes, every class
// read back with the same options (the same JSON and the same updates), bare names, and the
// errors for what Kestrel cannot read.
#include "framework/optimizers/serialization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/optimizers/optimizer_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::optimizers {
namespace {

using kestrel::testing::contains;
using kestrel::testing::error_message;
using nlohmann::json;
using testing::make_variable;

// Gradients for two variables over six steps: enough for momentum, bias corrections and an
// accumulation of 2 or 3 to show.
std::vector<std::vector<Tensor>> gradient_steps() {
  std::vector<std::vector<Tensor>> steps;
  for (int s = 0; s < 6; ++s) {
    const float k = 1.0f + 0.5f * static_cast<float>(s);
    steps.push_back({Tensor::from_vector<float>({0.3f * k, -1.2f, 2.5f / k}, {3}),
                     Tensor::from_vector<float>({-0.7f * k, 0.05f * k}, {2})});
  }
  return steps;
}

// The weights after training from the same start with the gradients above.
std::vector<std::vector<float>> train(Optimizer& optimizer) {
  Variable a = make_variable("a", {1.0f, -2.0f, 0.5f});
  Variable b = make_variable("b", {0.25f, 3.0f});
  for (const std::vector<Tensor>& grads : gradient_steps()) optimizer.apply(grads, {a, b});
  return {a.value().to_vector<float>(), b.value().to_vector<float>()};
}

// serialize -> deserialize gives the same class, the same config and the same updates, bit for bit.
template <class T, class Options>
void expect_round_trip(const Options& original_options) {
  T original(original_options);
  const json object = serialize(original);
  const std::shared_ptr<Optimizer> copy = deserialize(object);
  ASSERT_NE(dynamic_cast<T*>(copy.get()), nullptr) << object.dump();
  const Optimizer& rebuilt = *copy;
  EXPECT_EQ(typeid(rebuilt), typeid(T));
  EXPECT_EQ(serialize(*copy), object);
  // Through text too, as a .keras archive stores it.
  EXPECT_EQ(serialize(*deserialize(json::parse(object.dump()))), object);

  T fresh(original_options);
  const std::vector<std::vector<float>> want = train(fresh);
  const std::vector<std::vector<float>> got = train(*copy);
  EXPECT_EQ(got, want) << object.dump();
  EXPECT_NE(want[0], (std::vector<float>{1.0f, -2.0f, 0.5f}));  // the steps did move the weights
}

TEST(OptimizerConfig, AdamWritesKerasKeys) {
  const Adam adam({.learning_rate = 0.25,
                   .beta_1 = 0.5,
                   .beta_2 = 0.75,
                   .epsilon = 1e-3,
                   .amsgrad = true,
                   .clipnorm = 1.5,
                   .name = "my_adam"});
  EXPECT_EQ(serialize(adam), json::parse(R"({
    "module": "keras.optimizers", "class_name": "Adam", "registered_name": null,
    "config": {"name": "my_adam", "learning_rate": 0.25, "weight_decay": null, "clipnorm": 1.5,
               "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
               "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": null,
               "beta_1": 0.5, "beta_2": 0.75, "epsilon": 0.001, "amsgrad": true}})"));
}

TEST(OptimizerConfig, ScheduleIsWrittenAsItsKerasObject) {
  const SGD sgd({.learning_rate = schedules::ExponentialDecay(
                     {.initial_learning_rate = 0.5, .decay_steps = 100, .decay_rate = 0.25, .staircase = true}),
                 .momentum = 0.75,
                 .nesterov = true,
                 .weight_decay = 0.125,
                 .gradient_accumulation_steps = 4});
  EXPECT_EQ(serialize(sgd), json::parse(R"({
    "module": "keras.optimizers", "class_name": "SGD", "registered_name": null,
    "config": {"name": "SGD",
               "learning_rate": {"module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
                                 "registered_name": null,
                                 "config": {"initial_learning_rate": 0.5, "decay_steps": 100, "decay_rate": 0.25,
                                            "staircase": true, "name": "ExponentialDecay"}},
               "weight_decay": 0.125, "clipnorm": null, "global_clipnorm": null, "clipvalue": null,
               "use_ema": false, "ema_momentum": 0.99, "ema_overwrite_frequency": null, "loss_scale_factor": null,
               "gradient_accumulation_steps": 4, "momentum": 0.75, "nesterov": true}})"));
}

TEST(OptimizerConfig, RMSpropAndAdamWWriteTheirOwnKeys) {
  const json rmsprop = RMSprop({.rho = 0.5, .momentum = 0.25, .epsilon = 1e-4, .centered = true}).get_config();
  EXPECT_EQ(rmsprop.at("rho"), 0.5);
  EXPECT_EQ(rmsprop.at("momentum"), 0.25);
  EXPECT_EQ(rmsprop.at("epsilon"), 1e-4);
  EXPECT_EQ(rmsprop.at("centered"), true);
  EXPECT_EQ(rmsprop.at("name"), "rmsprop");
  EXPECT_EQ(rmsprop.size(), 15u);  // the 11 base keys and 4 of its own

  const json adamw = serialize(AdamW({.weight_decay = 0.5, .gradient_accumulation_steps = 3}));
  EXPECT_EQ(adamw.at("class_name"), "AdamW");
  EXPECT_EQ(adamw.at("config").at("weight_decay"), 0.5);
  EXPECT_EQ(adamw.at("config").at("gradient_accumulation_steps"), 3);
  EXPECT_EQ(adamw.at("config").at("beta_1"), 0.9);
}

// Keras writes the rate its variable holds, a float32: 1e-3 reads back as 0.0010000000474974513.
TEST(OptimizerConfig, ConstantRateIsTheVariablesCurrentValue) {
  Adam adam;
  EXPECT_EQ(adam.get_config().at("learning_rate").get<double>(), static_cast<double>(0.001f));
  adam.set_learning_rate(0.125);  // as ReduceLROnPlateau does
  EXPECT_EQ(adam.get_config().at("learning_rate"), 0.125);
}

// Keras refuses gradient_accumulation_steps=1; one step per call is its None.
TEST(OptimizerConfig, OneAccumulationStepIsWrittenAsNull) {
  EXPECT_TRUE(SGD({.gradient_accumulation_steps = 1}).get_config().at("gradient_accumulation_steps").is_null());
}

TEST(OptimizerConfig, SGDRoundTrips) {
  expect_round_trip<SGD>(SGDOptions{.learning_rate = 0.05,
                                    .momentum = 0.8,
                                    .nesterov = true,
                                    .weight_decay = 0.01,
                                    .clipvalue = 0.5,
                                    .gradient_accumulation_steps = 2,
                                    .name = "sgd_nesterov"});
}

TEST(OptimizerConfig, AdamRoundTripsWithACosineSchedule) {
  expect_round_trip<Adam>(AdamOptions{.learning_rate = schedules::CosineDecay({.initial_learning_rate = 0.01,
                                                                               .decay_steps = 4,
                                                                               .alpha = 0.1,
                                                                               .warmup_target = 0.05,
                                                                               .warmup_steps = 2,
                                                                               .name = "warm_cosine"}),
                                      .beta_1 = 0.8,
                                      .beta_2 = 0.99,
                                      .epsilon = 1e-4,
                                      .amsgrad = true,
                                      .weight_decay = 0.02,
                                      .global_clipnorm = 1.0});
}

TEST(OptimizerConfig, AdamWRoundTripsWithAccumulation) {
  expect_round_trip<AdamW>(AdamWOptions{.learning_rate = 0.003,
                                        .weight_decay = 0.1,
                                        .beta_1 = 0.7,
                                        .amsgrad = true,
                                        .clipnorm = 0.7,
                                        .gradient_accumulation_steps = 3,
                                        .name = "adamw_accumulating"});
}

TEST(OptimizerConfig, RMSpropRoundTripsWithAPiecewiseSchedule) {
  expect_round_trip<RMSprop>(RMSpropOptions{
      .learning_rate = schedules::PiecewiseConstantDecay({.boundaries = {1, 3}, .values = {0.1, 0.05, 0.01}}),
      .rho = 0.8,
      .momentum = 0.5,
      .epsilon = 1e-5,
      .centered = true,
      .clipvalue = 0.1});
}

TEST(OptimizerConfig, AccumulationSurvivesAdamWsConstructor) {
  AdamW adamw({.gradient_accumulation_steps = 2});
  EXPECT_EQ(adamw.gradient_accumulation_steps(), 2);
}

TEST(ScheduleConfig, EachScheduleWritesKerasKeysAndRoundTrips) {
  const schedules::CosineDecay cosine({.initial_learning_rate = 0.5, .decay_steps = 10});
  EXPECT_EQ(schedules::serialize(cosine), json::parse(R"({
    "module": "keras.optimizers.schedules", "class_name": "CosineDecay", "registered_name": null,
    "config": {"initial_learning_rate": 0.5, "decay_steps": 10, "alpha": 0.0, "name": "CosineDecay",
               "warmup_target": null, "warmup_steps": 0}})"));
  const schedules::PiecewiseConstantDecay piecewise({.boundaries = {10, 20}, .values = {1.0, 0.5, 0.25}});
  EXPECT_EQ(piecewise.get_config(), json::parse(R"({"boundaries": [10, 20], "values": [1.0, 0.5, 0.25],
                                                    "name": "PiecewiseConstant"})"));

  const std::vector<std::shared_ptr<LearningRateSchedule>> all = {
      std::make_shared<schedules::ExponentialDecay>(schedules::ExponentialDecayOptions{
          .initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.5, .staircase = true, .name = "decay"}),
      std::make_shared<schedules::PiecewiseConstantDecay>(piecewise),
      std::make_shared<schedules::CosineDecay>(schedules::CosineDecayOptions{
          .initial_learning_rate = 0.0, .decay_steps = 8, .alpha = 0.2, .warmup_target = 1.0, .warmup_steps = 4})};
  for (const auto& schedule : all) {
    const json object = schedules::serialize(*schedule);
    const std::shared_ptr<LearningRateSchedule> copy = schedules::deserialize(object);
    const LearningRateSchedule& rebuilt = *copy;
    const LearningRateSchedule& original = *schedule;
    EXPECT_EQ(typeid(rebuilt), typeid(original));
    EXPECT_EQ(schedules::serialize(*copy), object);
    for (std::int64_t step : {0, 1, 3, 5, 11, 25}) {
      EXPECT_EQ((*copy)(step), (*schedule)(step)) << object.dump() << " at step " << step;
    }
  }
}

// What Keras 3 writes for Adam() compiled in a model, read as Keras would.
TEST(OptimizerConfig, ReadsAConfigKerasWrote) {
  const std::shared_ptr<Optimizer> adam = deserialize(json::parse(R"({
    "module": "keras.optimizers", "class_name": "Adam", "registered_name": null,
    "config": {"name": "adam", "learning_rate": 0.0010000000474974513, "weight_decay": null, "clipnorm": null,
               "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
               "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": null,
               "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": false}})"));
  const auto* typed = dynamic_cast<Adam*>(adam.get());
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->name(), "adam");
  EXPECT_EQ(typed->learning_rate(), static_cast<double>(0.001f));
  EXPECT_EQ(typed->options().beta_2, 0.999);
  EXPECT_EQ(typed->options().epsilon, 1e-7);
  EXPECT_FALSE(typed->options().weight_decay.has_value());

  // Absent keys take Keras's defaults, AdamW's weight_decay among them; a null one is no decay.
  const std::shared_ptr<Optimizer> adamw = deserialize(json::parse(R"({"class_name": "AdamW", "config": {}})"));
  EXPECT_EQ(dynamic_cast<AdamW&>(*adamw).options().weight_decay.value(), 0.004);
  const std::shared_ptr<Optimizer> no_decay =
      deserialize(json::parse(R"({"class_name": "AdamW", "config": {"weight_decay": null}})"));
  EXPECT_EQ(dynamic_cast<AdamW&>(*no_decay).options().weight_decay.value(), 0.0);
}

// Keras reads ema_momentum and ema_overwrite_frequency only with use_ema, so without it they
// change nothing and are read as Keras reads them.
TEST(OptimizerConfig, EmaSettingsWithoutUseEmaChangeNothing) {
  const std::shared_ptr<Optimizer> sgd = deserialize(json::parse(
      R"({"class_name": "SGD", "config": {"use_ema": false, "ema_momentum": 0.5, "ema_overwrite_frequency": 10,
                                          "loss_scale_factor": 1.0}})"));
  EXPECT_EQ(sgd->get_config().at("ema_momentum"), 0.99);
  EXPECT_EQ(sgd->learning_rate(), static_cast<double>(0.01f));
}

TEST(OptimizerConfig, BareNamesAsKerasTakesThem) {
  const std::shared_ptr<Optimizer> adam = deserialize("adam");
  ASSERT_NE(dynamic_cast<Adam*>(adam.get()), nullptr);
  EXPECT_EQ(adam->name(), "adam");
  EXPECT_EQ(serialize(*adam), serialize(Adam()));
  EXPECT_NE(dynamic_cast<RMSprop*>(deserialize("RMSprop").get()), nullptr);
  EXPECT_EQ(deserialize("sgd")->learning_rate(), static_cast<double>(0.01f));
  // Keras finds a built-in class in any case.
  EXPECT_NE(dynamic_cast<AdamW*>(deserialize(json::parse(R"({"class_name": "adamw"})")).get()), nullptr);
  EXPECT_NE(dynamic_cast<Adam*>(get("ADAM").get()), nullptr);
}

TEST(OptimizerConfigErrors, UseEmaNamesTheClassAndTheKey) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "Adam", "config": {"use_ema": true}})")); });
  EXPECT_TRUE(contains(m, "optimizer class 'Adam'")) << m;
  EXPECT_TRUE(contains(m, "use_ema is true")) << m;
  EXPECT_TRUE(contains(m, "use_ema=False")) << m;
}

TEST(OptimizerConfigErrors, LossScaleFactorNamesItsValue) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "SGD", "config": {"loss_scale_factor": 128.0}})")); });
  EXPECT_TRUE(contains(m, "optimizer class 'SGD'")) << m;
  EXPECT_TRUE(contains(m, "loss_scale_factor is 128.0")) << m;
}

TEST(OptimizerConfigErrors, UnknownKeyIsNotDropped) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "RMSprop", "config": {"rho": 0.5, "decay": 0.01}})")); });
  EXPECT_TRUE(contains(m, "optimizer class 'RMSprop'")) << m;
  EXPECT_TRUE(contains(m, "'decay' (0.01)")) << m;
  EXPECT_TRUE(contains(m, "centered")) << m;  // the keys it does read
}

TEST(OptimizerConfigErrors, WrongTypeNamesTheKey) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "Adam", "config": {"beta_1": "high"}})")); });
  EXPECT_TRUE(contains(m, "optimizer class 'Adam'")) << m;
  EXPECT_TRUE(contains(m, "'beta_1'")) << m;
  EXPECT_TRUE(contains(m, "\"high\"")) << m;
}

TEST(OptimizerConfigErrors, OutOfRangeValueIsTheConstructorsError) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "SGD", "config": {"momentum": 1.5}})")); });
  EXPECT_TRUE(contains(m, "momentum must be a number in [0, 1], got 1.5")) << m;
}

TEST(OptimizerConfigErrors, UnknownClassListsKestrels) {
  const std::string m =
      error_message<ValueError>([] { deserialize(json::parse(R"({"class_name": "Nadam", "config": {}})")); });
  EXPECT_TRUE(contains(m, "unknown optimizer class 'Nadam'")) << m;
  EXPECT_TRUE(contains(m, "SGD, Adam, AdamW, RMSprop")) << m;
  const std::string no_class = error_message<ValueError>([] { deserialize(json::parse(R"({"config": {}})")); });
  EXPECT_TRUE(contains(no_class, "'class_name'")) << no_class;
  const std::string bare = error_message<ValueError>([] { deserialize("adagrad"); });
  EXPECT_TRUE(contains(bare, "'adagrad'")) << bare;
}

// A registered class of the user's own only shares the built-in one's name.
TEST(OptimizerConfigErrors, UsersRegisteredClassIsNotTheBuiltInOne) {
  const std::string m = error_message<ValueError>([] {
    deserialize(json::parse(R"({"module": "my_pkg", "class_name": "Adam", "registered_name": "my_pkg>Adam"})"));
  });
  EXPECT_TRUE(contains(m, "optimizers::deserialize")) << m;
  EXPECT_TRUE(contains(m, "'Adam' is registered as 'my_pkg>Adam'")) << m;
  const std::string schedule = error_message<ValueError>([] {
    schedules::deserialize(json::parse(R"({"class_name": "CosineDecay", "registered_name": "my_pkg>CosineDecay",
        "config": {"initial_learning_rate": 0.1, "decay_steps": 10}})"));
  });
  EXPECT_TRUE(contains(schedule, "'CosineDecay' is registered as 'my_pkg>CosineDecay'")) << schedule;
  // Keras names some classes by themselves; that is the built-in class.
  EXPECT_NE(dynamic_cast<Adam*>(deserialize(json::parse(R"({"class_name": "Adam", "registered_name": "Adam"})")).get()),
            nullptr);
}

TEST(OptimizerConfigErrors, LearningRateMustBeANumberOrASchedule) {
  const std::string m = error_message<ValueError>(
      [] { deserialize(json::parse(R"({"class_name": "Adam", "config": {"learning_rate": "fast"}})")); });
  EXPECT_TRUE(contains(m, "optimizer class 'Adam'")) << m;
  EXPECT_TRUE(contains(m, "'learning_rate'")) << m;
  EXPECT_TRUE(contains(m, "\"fast\"")) << m;
  const std::string schedule = error_message<ValueError>([] {
    deserialize(json::parse(R"({"class_name": "Adam", "config": {"learning_rate":
        {"class_name": "PolynomialDecay", "config": {"initial_learning_rate": 0.1, "decay_steps": 10}}}})"));
  });
  EXPECT_TRUE(contains(schedule, "unknown learning-rate schedule class 'PolynomialDecay'")) << schedule;
  EXPECT_TRUE(contains(schedule, "ExponentialDecay, PiecewiseConstantDecay, CosineDecay")) << schedule;
}

TEST(ScheduleConfigErrors, KeysAndValuesAreChecked) {
  const std::string steps = error_message<ValueError>([] {
    schedules::deserialize(json::parse(R"({"class_name": "ExponentialDecay",
        "config": {"initial_learning_rate": 0.1, "decay_steps": 10.5, "decay_rate": 0.5}})"));
  });
  EXPECT_TRUE(contains(steps, "learning-rate schedule class 'ExponentialDecay'")) << steps;
  EXPECT_TRUE(contains(steps, "'decay_steps'")) << steps;
  EXPECT_TRUE(contains(steps, "10.5")) << steps;
  const std::string missing = error_message<ValueError>([] {
    schedules::deserialize(json::parse(R"({"class_name": "CosineDecay", "config": {"initial_learning_rate": 0.1}})"));
  });
  EXPECT_TRUE(contains(missing, "learning-rate schedule class 'CosineDecay'")) << missing;
  EXPECT_TRUE(contains(missing, "no 'decay_steps'")) << missing;
  const std::string unknown = error_message<ValueError>([] {
    schedules::deserialize(json::parse(R"({"class_name": "PiecewiseConstantDecay",
        "config": {"boundaries": [1], "values": [0.1, 0.2], "cycle": true}})"));
  });
  EXPECT_TRUE(contains(unknown, "'cycle' (true)")) << unknown;
  // Whole-number floats are steps, as Keras takes 100.0.
  const std::shared_ptr<LearningRateSchedule> whole = schedules::deserialize(json::parse(
      R"({"class_name": "ExponentialDecay", "config": {"initial_learning_rate": 1.0, "decay_steps": 2.0,
                                                       "decay_rate": 0.5}})"));
  EXPECT_DOUBLE_EQ((*whole)(4), 0.25);
}

// A schedule of one's own: the rate halves every step.
class Halving : public LearningRateSchedule {
 public:
  double operator()(std::int64_t step) const override { return std::pow(0.5, static_cast<double>(step)); }
  Tensor operator()(const Tensor& /*step*/) const override { return Tensor::scalar(1.0); }
  std::string name() const override { return "Halving"; }
};

// An optimizer of one's own: plain descent.
class Descent : public Optimizer {
 public:
  Descent() : Optimizer("descent", {}) {}

 protected:
  void build_slots(const std::vector<Variable>& /*variables*/) override {}
  void update_step(const Tensor& gradient, const Variable& variable, std::size_t /*index*/,
                   const Tensor& learning_rate) override {
    variable.assign(ops::subtract(variable.value(), ops::multiply(gradient, learning_rate)));
  }
};

TEST(OptimizerConfigErrors, ClassesOfOnesOwnHaveNoKerasConfig) {
  const std::string optimizer = error_message<ValueError>([] { serialize(Descent()); });
  EXPECT_TRUE(contains(optimizer, "optimizer 'descent'")) << optimizer;
  EXPECT_TRUE(contains(optimizer, "of a class of its own")) << optimizer;
  EXPECT_TRUE(contains(optimizer, "SGD, Adam, AdamW, RMSprop")) << optimizer;

  const std::string schedule = error_message<ValueError>([] { serialize(SGD({.learning_rate = Halving()})); });
  EXPECT_TRUE(contains(schedule, "learning-rate schedule 'Halving'")) << schedule;
  EXPECT_TRUE(contains(schedule, "ExponentialDecay, PiecewiseConstantDecay, CosineDecay")) << schedule;
}

}  // namespace
}  // namespace kestrel::optimizers
