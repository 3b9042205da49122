#include "framework/model/callback.h"

#include "framework/core/error.h"

namespace kestrel {

Model& Callback::model() const {
  if (model_ == nullptr) {
    throw ValueError(
        "Callback::model(): this callback is not attached to a model; fit, evaluate and predict attach it "
        "(or call set_model(&model) first)");
  }
  return *model_;
}

}  // namespace kestrel
