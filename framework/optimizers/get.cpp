// optimizers::get: Keras's string identifiers for optimizers ("adam" in compile()).
#include <cctype>
#include <string>

#include "framework/core/error.h"
#include "framework/optimizers/adam.h"
#include "framework/optimizers/adamw.h"
#include "framework/optimizers/rmsprop.h"
#include "framework/optimizers/sgd.h"

namespace kestrel::optimizers {

Handle<Optimizer> get(std::string_view name) {
  std::string key(name);
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "sgd") return SGD();
  if (key == "adam") return Adam();
  if (key == "adamw") return AdamW();
  if (key == "rmsprop") return RMSprop();
  throw ValueError("optimizers::get: unknown optimizer '" + std::string(name) +
                   "'; known names are sgd, adam, adamw, rmsprop (any case)");
}

}  // namespace kestrel::optimizers
