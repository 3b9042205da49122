// Uses the installed Kestrel the way a user's program does: one include, ops, autodiff.
// Exits 0 and prints "ok" when the results are right.
#include <cmath>
#include <cstdio>
#include <vector>

#include "kestrel.h"

namespace {

bool near(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i)
    ok = std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i]));
  if (!ok) {
    std::printf("%s: got", what);
    for (float v : got) std::printf(" %g", v);
    std::printf(", want");
    for (float v : want) std::printf(" %g", v);
    std::printf("\n");
  }
  return ok;
}

}  // namespace

int main() {
  using namespace kestrel;
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<float>({5, 6, 7, 8}, {2, 2});

  bool ok = near(ops::matmul(a, b).to_vector<float>(), {19, 22, 43, 50}, "matmul");

  // d/da sum(a b) = ones b^T: every row of the gradient holds b's row sums.
  auto [value, grads] =
      value_and_grad([](const std::vector<Tensor>& x) { return ops::sum(ops::matmul(x[0], x[1])); }, {a, b});
  ok = near(value.to_vector<float>(), {134}, "sum(matmul)") && ok;
  ok = near(grads[0].to_vector<float>(), {11, 15, 11, 15}, "gradient for a") && ok;
  // d/db sum(a b) = a^T ones: row k of the gradient is filled with the sum of a's column k.
  ok = near(grads[1].to_vector<float>(), {4, 4, 6, 6}, "gradient for b") && ok;

  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
