// What the runtime tells a session's process, as it happens: a callback its
// stream reached, a task of its that failed, and what its kernels printed. The gRPC server forwards them
// on the session's stream; the embedded transport hands them to the client's
// dispatcher directly. Both must return quickly: they run on worker threads.
#ifndef ACLD_DAEMON_CORE_SESSION_EVENTS_H_
#define ACLD_DAEMON_CORE_SESSION_EVENTS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "daemon/core/stream.h"

namespace acld {

struct CallbackDue {
  uint64_t callback_id = 0;
  StreamId stream = 0;
};

// Shared memory the session imported was revoked by its exporter; the
// session's process answers with the notice it saw (Runtime::RevocationSeen).
struct ImportRevoked {
  uint64_t notice = 0;
  std::string reason;
};

struct SessionEvents {
  std::function<void(const CallbackDue&)> callback_due;
  std::function<void(const TaskFailure&)> task_failed;
  // What a kernel printed (device printf): the process prints it on its stdout.
  std::function<void(const KernelOutput&)> kernel_output;
  std::function<void(const ImportRevoked&)> import_revoked;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_EVENTS_H_
