// A kernel launch as a stream queues it until the device takes it: the
// function, its argument block and the device memory it pinned.
//
// A record rather than a closure, so that queuing a launch costs a move of a
// few fields and no allocation of its own (docs/architecture.md, "Compact
// launches").
#ifndef ACLD_DAEMON_CORE_KERNEL_LAUNCH_H_
#define ACLD_DAEMON_CORE_KERNEL_LAUNCH_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/core/pinned_memory.h"
#include "hal/executable.h"
#include "hal/stream.h"

namespace acld {

struct KernelLaunch {
  const hal::Function* function = nullptr;
  std::shared_ptr<const void> executable;  // keeps `function` alive; null for built-ins
  // params.memory is `pinned`. The argument block stays here until the task
  // is done: a failed launch's arguments go to the process's exception
  // callback.
  hal::LaunchParams params;
  // The memory the launch pinned, held until the device reports the launch
  // (also when the backend resolves nothing: placeholder data, and the
  // session's release fence).
  std::shared_ptr<PinnedMemory> pinned;
  // A range that failed its check fails the task when the stream reaches it,
  // as a device faults when the kernel runs.
  absl::Status pinned_status;
  // The session's handle of the function (aclrtBinaryGetFunction); 0 for a
  // built-in kernel.
  uint64_t function_handle = 0;

  absl::StatusOr<uint64_t> SubmitTo(hal::Stream& device) {
    if (!pinned_status.ok()) return pinned_status;
    return device.Launch(*function, params);
  }
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_KERNEL_LAUNCH_H_
