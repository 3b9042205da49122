#include "framework/distribute/distribution.h"

#include "framework/core/error.h"

namespace kestrel::distribute {
namespace {
thread_local const Distribution* current_distribution = nullptr;

std::string name_of(const Distribution* distribution) {
  return distribution != nullptr ? distribution->name() : std::string("the default strategy");
}
}  // namespace

const Distribution* current() { return current_distribution; }

DistributionScope::DistributionScope(const Distribution& distribution)
    : previous_(current_distribution), owner_(&distribution) {
  current_distribution = &distribution;
}

DistributionScope::~DistributionScope() { current_distribution = previous_; }

const Distribution* distribution_of(const Variable& variable) {
  return static_cast<const Distribution*>(variable.owner());
}

void require_created_in(const Distribution* distribution, const std::vector<Variable>& variables,
                        const std::string& what) {
  for (const Variable& v : variables) {
    const Distribution* owner = distribution_of(v);
    if (owner == distribution) continue;
    throw ValueError("Variable (" + v.name() + ": " + v.value().spec().to_string() +
                     ") was not created in the distribution strategy scope of (" + name_of(distribution) +
                     "); it was created under " + name_of(owner) + ". " + what +
                     " was most likely built outside the scope it now runs in: create the model, its optimizer "
                     "and metrics inside one scope, and compile and fit there:\n"
                     "  auto scope = strategy.scope();\n"
                     "  MyModel model;\n"
                     "  model.compile({...});\n"
                     "  model.fit(dataset, {...});");
  }
}

}  // namespace kestrel::distribute
