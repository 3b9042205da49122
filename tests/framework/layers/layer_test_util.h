// Test support for layers: gradient checks with respect to a layer's weights.
//
//   layers::Dense dense(3);
//   Tensor x = random::normal({2, 4}, random::Key(0));
//   dense(x);                                                     // build
//   GradcheckResult r = weight_gradcheck([&] { return dense(x); }, dense.weights());
//   EXPECT_TRUE(r.ok) << r.report;
//
// kestrel::gradcheck differentiates with respect to a function's arguments; a layer reads its
// weights from Variables instead, so this check takes the analytic gradient with a GradientTape
// and the numeric one by assigning perturbed values, with gradcheck's tolerances.
#pragma once

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/core/random.h"
#include "framework/core/variable.h"
#include "framework/ops/ops.h"

namespace kestrel::testing {

inline GradcheckResult weight_gradcheck(const std::function<Tensor()>& f, const std::vector<Variable>& weights,
                                        GradcheckOptions options = {}) {
  Tensor probe;
  {
    autodiff::NoGradScope no_grad;
    probe = f();
  }
  Tensor direction = random::normal(probe.shape(), random::Key(options.seed));
  std::vector<double> dir = direction.to_vector<double>();
  auto projected = [&] {
    std::vector<double> y = f().to_vector<double>();
    double total = 0;
    for (std::size_t i = 0; i < y.size(); ++i) total += y[i] * dir[i];
    return total;
  };

  std::vector<Tensor> sources;
  for (const Variable& w : weights) sources.push_back(w.value());
  std::vector<Tensor> analytic;
  {
    GradientTape tape;
    Tensor target = ops::sum(ops::multiply(f(), direction));
    analytic = tape.gradient(target, sources);
  }

  GradcheckResult result;
  double worst_excess = -1;
  autodiff::NoGradScope no_grad;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const Variable& w = weights[i];
    Tensor original = w.value();
    std::vector<float> values = original.to_vector<float>();
    std::vector<double> got = analytic[i].to_vector<double>();
    for (std::size_t j = 0; j < values.size(); ++j) {
      float center = values[j];
      std::vector<float> moved = values;
      moved[j] = center + static_cast<float>(options.eps);
      w.assign(Tensor::from_vector(moved, original.shape()));
      double f_plus = projected();
      float plus = moved[j];
      moved[j] = center - static_cast<float>(options.eps);
      w.assign(Tensor::from_vector(moved, original.shape()));
      double f_minus = projected();
      double numeric = (f_plus - f_minus) / (static_cast<double>(plus) - static_cast<double>(moved[j]));
      double error = std::fabs(got[j] - numeric);
      double allowed = options.atol + options.rtol * std::fabs(numeric);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (error - allowed > worst_excess) {
        worst_excess = error - allowed;
        std::ostringstream report;
        report << "weight '" << w.name() << "' element " << j << ": analytic " << got[j] << ", numeric " << numeric
               << ", |error| " << error << " (allowed " << allowed << ")";
        result.report = report.str();
      }
    }
    w.assign(original);
  }
  result.ok = worst_excess <= 0;
  return result;
}

}  // namespace kestrel::testing
