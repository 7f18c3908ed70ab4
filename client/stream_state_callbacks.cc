#include "client/stream_state_callbacks.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "proto/acl/acl_status.h"

namespace acl_client {

StreamStateCallbacks& StreamStateCallbacks::Get() {
  static StreamStateCallbacks* callbacks = new StreamStateCallbacks;
  return *callbacks;
}

absl::Status StreamStateCallbacks::Register(const char* name, aclrtStreamStateCallback callback,
                                            void* args) {
  constexpr const char* kApi = "aclrtRegStreamStateCallback";
  if (name == nullptr || name[0] == '\0') {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(kApi, ": regName is empty"));
  }
  const size_t length = strnlen(name, kMaxNameBytes + 1);
  if (length > kMaxNameBytes) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(kApi, ": regName is longer than ", kMaxNameBytes,
                                        " bytes"));
  }
  const std::string key(name, length);
  absl::MutexLock lock(&mu_);
  auto it = callbacks_.find(key);
  if (callback == nullptr) {
    if (it == callbacks_.end()) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": no callback is registered as \"", key, "\""));
    }
    callbacks_.erase(it);
    return absl::OkStatus();
  }
  if (it != callbacks_.end()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(kApi, ": \"", key,
                                        "\" is registered already (remove it with a NULL "
                                        "callback first)"));
  }
  if (callbacks_.size() >= kMaxCallbacks) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(kApi, ": at most ", kMaxCallbacks,
                                        " stream state callbacks may be registered"));
  }
  callbacks_[key] = Entry{callback, args};
  return absl::OkStatus();
}

void StreamStateCallbacks::Notify(const std::vector<uint64_t>& streams,
                                  aclrtStreamState state) const {
  if (streams.empty()) return;
  std::vector<Entry> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : callbacks_) entries.push_back(entry);
  }
  for (uint64_t stream : streams) {
    for (const Entry& entry : entries) {
      entry.callback(reinterpret_cast<aclrtStream>(static_cast<uintptr_t>(stream)), state,
                     entry.args);
    }
  }
}

}  // namespace acl_client
