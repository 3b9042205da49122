// A training run split across processes, for the resume-exactness test:
//   resume_probe straight  OUT   3 epochs in one go, then save OUT
//   resume_probe first     CKPT  2 epochs, then save CKPT (weights and optimizer state)
//   resume_probe resume    CKPT OUT   a fresh process: load CKPT, train epoch 3, save OUT
// Each run builds the same model from the same seed; dropout and shuffling are keyed on the
// optimizer's step and the epoch, so the resumed run must match the straight one bit for bit.
#include <cstdio>
#include <string>

#include "kestrel.h"

using namespace kestrel;

namespace {

struct Problem {
  Tensor x, y;
};

Problem make_problem() {
  Tensor x = random::normal({96, 6}, random::Key(100));
  Tensor y = ops::cast(ops::greater(ops::sum(x, {.axes = {1}}), ops::scalar_like(x, 0.0)), DType::int64);
  return {x, y};
}

std::unique_ptr<Sequential> make_model() {
  clear_session();
  random::set_global_seed(42);
  auto model = std::make_unique<Sequential>(std::initializer_list<LayerArg>{layers::Dense(16, {.activation = "relu"}),
                                                                            layers::Dropout(0.25), layers::Dense(2)});
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  model->build({1, 6});
  return model;
}

void fit(Sequential& model, int initial_epoch, int epochs) {
  Problem p = make_problem();
  model.fit(p.x, p.y, {.batch_size = 16, .epochs = epochs, .verbose = 0, .initial_epoch = initial_epoch});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    auto model = make_model();
    if (mode == "straight" && argc == 3) {
      fit(*model, 0, 3);
      model->save_weights(argv[2]);
    } else if (mode == "first" && argc == 3) {
      fit(*model, 0, 2);
      model->save_weights(argv[2]);
    } else if (mode == "resume" && argc == 4) {
      model->load_weights(argv[2]);
      fit(*model, 2, 3);
      model->save_weights(argv[3]);
    } else {
      std::fprintf(stderr, "usage: resume_probe straight OUT | first CKPT | resume CKPT OUT\n");
      return 2;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "resume_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
