// aclInit / aclFinalize / aclFinalizeReference and the callback registries:
// SPEC section 4, the client's half.
//
// The daemon holds the counts (so the host-wide count is exact across
// processes); the client holds what must live in the process: the callbacks,
// the config content handed to them, and one lock that makes each lifecycle
// call atomic with its callbacks, as CANN does.
#ifndef ACLD_CLIENT_LIFECYCLE_H_
#define ACLD_CLIENT_LIFECYCLE_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/callback_registry.h"
#include "client/init_config.h"
#include "client/transport.h"

namespace acl_client {

class Lifecycle {
 public:
  // The session's transport; `initialize` (if set) is ClientRuntime::transport's.
  using TransportProvider =
      std::function<absl::StatusOr<Transport*>(const acld::InitSettings* initialize)>;

  // `on_finalized` runs after every full finalize (the client drops its
  // process-local device state there).
  Lifecycle(TransportProvider transport, std::function<void()> on_finalized);

  absl::Status Init(const char* config_path);
  absl::Status Finalize();
  // `ref_count` (may be NULL) receives the count after the call.
  absl::Status FinalizeReference(uint64_t* ref_count);

  absl::Status RegisterInitCallback(aclRegisterCallbackType type, aclInitCallbackFunc callback,
                                    void* user_data);
  absl::Status UnregisterInitCallback(aclRegisterCallbackType type, aclInitCallbackFunc callback);
  absl::Status RegisterFinalizeCallback(aclRegisterCallbackType type,
                                        aclFinalizeCallbackFunc callback, void* user_data);
  absl::Status UnregisterFinalizeCallback(aclRegisterCallbackType type,
                                          aclFinalizeCallbackFunc callback);

  // defaultDevice.default_device of the current initialization, if any.
  std::optional<int32_t> default_device() const;

 private:
  absl::Status RunFinalizeCallbacks();
  absl::Status FullFinalize(Transport& transport);

  const TransportProvider transport_;
  const std::function<void()> on_finalized_;
  // Recursive: a callback may call back into the lifecycle API (e.g. register
  // another callback, or query) on the same thread.
  mutable std::recursive_mutex mu_;
  // Mirror of "the daemon's count for us is > 0": every change to that count
  // passes through this object under mu_. It falls behind when acld applies
  // an Initialize whose answer the caller no longer waited for (Init copes).
  bool initialized_ = false;
  InitConfig config_;
  InitCallbackRegistry init_callbacks_;
  FinalizeCallbackRegistry finalize_callbacks_;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_LIFECYCLE_H_
