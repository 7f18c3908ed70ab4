// Device memory owned by sessions, and the address checks every device access
// goes through.
//
// Each allocation belongs to exactly one session. Resolve() is the only way to
// turn a device address into bytes, and it refuses any range that is not
// entirely inside one of the caller's live allocations: another session's
// memory, freed memory and past-the-end ranges all fail the same way.
#ifndef ACLD_DAEMON_CORE_MEMORY_MANAGER_H_
#define ACLD_DAEMON_CORE_MEMORY_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/session_id.h"
#include "hal/backend.h"

namespace acld {

// Bytes a task may touch, kept alive while the task holds this.
struct ResolvedRange {
  uint8_t* data = nullptr;
  int32_t device = 0;
  std::shared_ptr<void> keepalive;
};

class MemoryManager {
 public:
  explicit MemoryManager(hal::Backend& backend) : backend_(backend) {}

  // Allocates `size` bytes on `device` for `session`, within the device's free
  // memory and the session's quota.
  absl::StatusOr<uint64_t> Allocate(SessionId session, int32_t device, uint64_t size);
  absl::Status Free(SessionId session, uint64_t address);

  // [address, address + bytes) inside one live allocation of `session`.
  absl::StatusOr<ResolvedRange> Resolve(SessionId session, uint64_t address, uint64_t bytes) const;

  // True when `address` looks like a device address (any device, any session).
  static bool IsDeviceAddress(uint64_t address);

  // Frees every allocation of `session` (on `device` only, when given).
  void ReleaseSession(SessionId session, std::optional<int32_t> device = std::nullopt);
  // The session is gone: its memory and its quota.
  void RemoveSession(SessionId session);

  // 0 means no quota.
  void SetQuota(SessionId session, uint64_t bytes);
  void SetDefaultQuota(uint64_t bytes);

  struct SessionUsage {
    uint64_t bytes = 0;
    uint64_t allocations = 0;
    uint64_t quota = 0;
  };
  SessionUsage UsageOf(SessionId session) const;

 private:
  struct Allocation {
    SessionId session;
    int32_t device;
    hal::DeviceBuffer buffer;
  };

  void FreeLocked(std::map<uint64_t, Allocation>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  hal::Backend& backend_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, Allocation> allocations_ ABSL_GUARDED_BY(mu_);  // by start address
  std::map<SessionId, SessionUsage> usage_ ABSL_GUARDED_BY(mu_);
  uint64_t default_quota_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_MEMORY_MANAGER_H_
