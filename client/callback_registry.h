// The init / finalize callback registries of aclInitCallbackRegister and
// aclFinalizeCallbackRegister (SPEC section 4).
//
// Callbacks are function pointers, so they live in the client process. Each
// type other than ACL_REG_TYPE_OTHER holds at most one callback; OTHER holds
// any number, notified in registration order.
#ifndef ACLD_CLIENT_CALLBACK_REGISTRY_H_
#define ACLD_CLIENT_CALLBACK_REGISTRY_H_

#include <initializer_list>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acl_client {

template <typename Callback>
class CallbackRegistry {
 public:
  struct Entry {
    aclRegisterCallbackType type;
    Callback callback;
    void* user_data;
  };

  absl::Status Register(aclRegisterCallbackType type, Callback callback, void* user_data) {
    if (callback == nullptr) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "the callback function must not be NULL");
    }
    absl::MutexLock lock(&mu_);
    if (type != ACL_REG_TYPE_OTHER) {
      for (const Entry& entry : entries_) {
        if (entry.type == type) {
          return acld::AclStatus(
              ACL_ERROR_INTERNAL_ERROR,
              absl::StrCat("a callback of type ", type,
                           " is already registered; only ACL_REG_TYPE_OTHER holds several"));
        }
      }
    }
    entries_.push_back({type, callback, user_data});
    return absl::OkStatus();
  }

  absl::Status Unregister(aclRegisterCallbackType type, Callback callback) {
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->type == type && it->callback == callback) {
        entries_.erase(it);
        return absl::OkStatus();
      }
    }
    return acld::AclStatus(
        ACL_ERROR_INTERNAL_ERROR,
        absl::StrCat("no callback of type ", type, " with this function is registered"));
  }

  // A copy of the callbacks to notify: types in `order`, OTHER ones in
  // registration order; types not in `order` are kept but not returned. The
  // copy lets callbacks (un)register without deadlocking on the registry.
  std::vector<Entry> InOrder(std::initializer_list<aclRegisterCallbackType> order) const {
    absl::MutexLock lock(&mu_);
    std::vector<Entry> ordered;
    for (aclRegisterCallbackType type : order) {
      for (const Entry& entry : entries_) {
        if (entry.type == type) ordered.push_back(entry);
      }
    }
    return ordered;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

using InitCallbackRegistry = CallbackRegistry<aclInitCallbackFunc>;
using FinalizeCallbackRegistry = CallbackRegistry<aclFinalizeCallbackFunc>;

// The notification orders CANN uses.
inline constexpr std::initializer_list<aclRegisterCallbackType> kInitNotifyOrder = {
    ACL_REG_TYPE_ACL_MODEL, ACL_REG_TYPE_ACL_OP_EXECUTOR, ACL_REG_TYPE_ACL_DVPP,
    ACL_REG_TYPE_OTHER};
inline constexpr std::initializer_list<aclRegisterCallbackType> kFinalizeNotifyOrder = {
    ACL_REG_TYPE_ACL_OP_COMPILER, ACL_REG_TYPE_ACL_MODEL, ACL_REG_TYPE_ACL_DVPP,
    ACL_REG_TYPE_OTHER};

}  // namespace acl_client

#endif  // ACLD_CLIENT_CALLBACK_REGISTRY_H_
