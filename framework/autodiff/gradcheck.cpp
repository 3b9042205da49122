#include "framework/autodiff/gradcheck.h"

#include <cmath>
#include <sstream>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace kestrel {
namespace {

double projected(const Tensor& output, const std::vector<double>& direction) {
  std::vector<double> values = output.to_vector<double>();
  double total = 0;
  for (std::size_t i = 0; i < values.size(); ++i) total += values[i] * direction[i];
  return total;
}

Tensor with_element(const Tensor& t, std::int64_t index, float value) {
  std::vector<float> values = t.to_vector<float>();
  values[static_cast<std::size_t>(index)] = value;
  return Tensor::from_vector(values, t.shape());
}

}  // namespace

GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs, GradcheckOptions options) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].dtype() == DType::bfloat16) {
      throw TypeError("[gradcheck] input " + std::to_string(i) + " is " + inputs[i].spec().to_string() +
                      "; gradcheck needs float32 inputs (bfloat16 is too coarse for finite differences)");
    }
  }
  Tensor probe;
  {
    autodiff::NoGradScope no_grad;
    probe = f(inputs);
  }
  std::vector<double> direction = random::normal(probe.shape(), random::Key(options.seed)).to_vector<double>();
  Tensor direction_tensor = Tensor::from_vector(std::vector<float>(direction.begin(), direction.end()), probe.shape());
  // Use the float32-rounded direction on both sides so they differentiate the same function.
  direction = direction_tensor.to_vector<double>();

  auto scalar_f = [&](const std::vector<Tensor>& a) { return ops::sum(ops::multiply(f(a), direction_tensor)); };
  std::vector<Tensor> analytic = grad(scalar_f, inputs);

  GradcheckResult result;
  double worst_excess = -1;
  autodiff::NoGradScope no_grad;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || inputs[i].dtype() != DType::float32) continue;
    std::vector<double> analytic_values = analytic[i].to_vector<double>();
    std::vector<float> x = inputs[i].to_vector<float>();
    for (std::int64_t j = 0; j < inputs[i].numel(); ++j) {
      float center = x[static_cast<std::size_t>(j)];
      float plus = center + static_cast<float>(options.eps);
      float minus = center - static_cast<float>(options.eps);
      std::vector<Tensor> args = inputs;
      args[i] = with_element(inputs[i], j, plus);
      double f_plus = projected(f(args), direction);
      args[i] = with_element(inputs[i], j, minus);
      double f_minus = projected(f(args), direction);
      // Divide by the step actually taken after float32 rounding, not the nominal one.
      double numeric = (f_plus - f_minus) / (static_cast<double>(plus) - static_cast<double>(minus));
      double got = analytic_values[static_cast<std::size_t>(j)];
      double error = std::fabs(got - numeric);
      double allowed = options.atol + options.rtol * std::fabs(numeric);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (error - allowed > worst_excess) {
        worst_excess = error - allowed;
        std::ostringstream report;
        report << "input " << i << " " << inputs[i].spec().to_string() << " element " << j << ": analytic " << got
               << ", numeric " << numeric << ", |error| " << error << " (allowed " << allowed << ")";
        result.report = report.str();
      }
    }
  }
  result.ok = worst_excess <= 0;
  return result;
}

}  // namespace kestrel
