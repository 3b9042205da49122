#include "framework/saving/save_steps.h"

namespace kestrel::saving::detail {
namespace {

SaveHook installed_hook = nullptr;

}  // namespace

void set_save_hook(SaveHook hook) { installed_hook = hook; }

void before_save_step(SaveStep step) {
  if (installed_hook != nullptr) installed_hook(step);
}

}  // namespace kestrel::saving::detail
