#include "framework/model/callback_list.h"

#include "framework/distribute/distribution.h"
#include "framework/model/model.h"

namespace kestrel::detail {

CallbackList::CallbackList(const std::vector<Handle<Callback>>& callbacks, Model* model) {
  const distribute::Distribution* distribution = model != nullptr ? model->distribution() : nullptr;
  const bool chief = distribution == nullptr || distribution->is_chief();
  for (const Handle<Callback>& c : callbacks) {
    if (!c || (!chief && c->chief_worker_only())) continue;
    c->set_model(model);
    callbacks_.push_back(c);
  }
}

#define KESTREL_FORWARD_HOOK(hook, Arg)                              \
  void CallbackList::hook(Arg arg, const Logs& logs) {               \
    for (const Handle<Callback>& c : callbacks_) c->hook(arg, logs); \
  }
#define KESTREL_FORWARD_LOGS_HOOK(hook)                         \
  void CallbackList::hook(const Logs& logs) {                   \
    for (const Handle<Callback>& c : callbacks_) c->hook(logs); \
  }

KESTREL_FORWARD_LOGS_HOOK(on_train_begin)
KESTREL_FORWARD_LOGS_HOOK(on_train_end)
KESTREL_FORWARD_HOOK(on_epoch_begin, int)
KESTREL_FORWARD_HOOK(on_epoch_end, int)
KESTREL_FORWARD_HOOK(on_train_batch_begin, std::int64_t)
KESTREL_FORWARD_HOOK(on_train_batch_end, std::int64_t)
KESTREL_FORWARD_LOGS_HOOK(on_test_begin)
KESTREL_FORWARD_LOGS_HOOK(on_test_end)
KESTREL_FORWARD_HOOK(on_test_batch_begin, std::int64_t)
KESTREL_FORWARD_HOOK(on_test_batch_end, std::int64_t)
KESTREL_FORWARD_LOGS_HOOK(on_predict_begin)
KESTREL_FORWARD_LOGS_HOOK(on_predict_end)
KESTREL_FORWARD_HOOK(on_predict_batch_begin, std::int64_t)
KESTREL_FORWARD_HOOK(on_predict_batch_end, std::int64_t)

#undef KESTREL_FORWARD_HOOK
#undef KESTREL_FORWARD_LOGS_HOOK

}  // namespace kestrel::detail
