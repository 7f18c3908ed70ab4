// The client library's process-wide state: the connection to the runtime
// (chosen by ACLD_ADDRESS), the lifecycle, the handles, and each thread's
// current context.
#ifndef ACLD_CLIENT_CLIENT_RUNTIME_H_
#define ACLD_CLIENT_CLIENT_RUNTIME_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/callback_dispatcher.h"
#include "client/handle_table.h"
#include "client/lifecycle.h"
#include "client/thread_id.h"
#include "client/transport.h"

namespace acl_client {

class ClientRuntime {
 public:
  // The process's instance. Never destroyed: application threads may still
  // call the API while static destructors run.
  static ClientRuntime& Get();

  // The session's transport, connecting on first use. Until a session opens,
  // each call tries again (acld may have been started meanwhile); a session
  // that was lost stays lost (every call then fails with SOCKET_CLOSE).
  // `initialize`: CreateTransport's, for a session that opens now.
  absl::StatusOr<Transport*> transport(const acld::InitSettings* initialize = nullptr);

  Lifecycle& lifecycle() { return lifecycle_; }
  HandleTable& handles() { return handles_; }
  CallbackDispatcher& callbacks() { return callbacks_; }

  // The calling thread's current context, if it has a live one.
  std::optional<acld::ContextInfo> current_context();
  // As current_context(), but a thread without one gets the config's default
  // device (defaultDevice.default_device), set implicitly as CANN does;
  // otherwise ACL_ERROR_RT_CONTEXT_NULL.
  absl::StatusOr<acld::ContextInfo> RequireContext();
  void set_current_context(const acld::ContextInfo& context);

  // aclrtSetDevice: one device reference, and the device's default context
  // becomes the thread's current context.
  absl::StatusOr<acld::ContextInfo> SetDevice(int32_t device_id);

  // Closes the session now (process exit): the daemon reaps it at once.
  void Disconnect();

 private:
  ClientRuntime();
  // In a fork() child of a process with a session: every later call that
  // needs the session fails with ACL_ERROR_RT_SOCKET_CLOSE, saying why.
  void ForkedChild();


  absl::Mutex connect_mu_;
  std::unique_ptr<Transport> owned_transport_ ABSL_GUARDED_BY(connect_mu_);
  std::atomic<Transport*> transport_{nullptr};
  // Set in a fork() child whose parent had a session: the parent's pid.
  std::atomic<pid_t> session_parent_{0};
  CallbackDispatcher callbacks_;
  Lifecycle lifecycle_;
  HandleTable handles_;
};

// aclrtGetThreadLastTaskId: the id of the last task the calling thread enqueued.
void SetThreadLastTaskId(uint64_t task_id);
uint64_t ThreadLastTaskId();

}  // namespace acl_client

#endif  // ACLD_CLIENT_CLIENT_RUNTIME_H_
