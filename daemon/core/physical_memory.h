// Virtual address management and physical memory sharing: aclrtMallocPhysical,
// aclrtReserveMemAddress, aclrtMapMem, aclrtMemSetAccess and their inverses,
// and aclrtMemExportToShareableHandle with its whitelist and import.
//
// A session holds physical handles (its own allocations, or imports of
// another's) and reservations of device addresses (hal::Device::
// ReserveAddresses); a mapping puts part of a handle's memory at part of a
// reservation, and the memory manager resolves those addresses for that
// session only (MemoryManager::Map). Physical memory is charged once, to the
// session that allocated it.
//
// A shareable handle is a capability: 64 bits of the kernel's randomness,
// never a counter or an address. Whitelists are the kernel's word
// (kernel_whitelist.h). Nothing outlives its owner: the owner's free, reset
// or end revokes every import (work already launched keeps its pin and
// completes; the importer's later use fails naming the reason, and its own
// unmap, release and free of what it held still succeed).
#ifndef ACLD_DAEMON_CORE_PHYSICAL_MEMORY_H_
#define ACLD_DAEMON_CORE_PHYSICAL_MEMORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/kernel_whitelist.h"
#include "daemon/core/memory_manager.h"
#include "daemon/core/session_id.h"
#include "hal/backend.h"

namespace acld {

class PhysicalMemory {
 public:
  // Per session: handles (own and imported), reservations, mappings and
  // shareable handles each.
  static constexpr size_t kMaxPerSession = 1024;
  // Imports of one export at once. An owner's free revokes them all under
  // the runtime's lock; without a bound, one user's sessions made it
  // hundreds of thousands.
  static constexpr size_t kMaxImportsPerExport = 1024;
  // Imports of one export by one session at once: a whitelisted importer
  // must not take every place of the export from the others the owner let in.
  static constexpr size_t kMaxImportsPerImporter = 16;
  // The addresses a session may hold reserved on a device, in multiples of
  // its memory: every session shares the device's address window.
  static constexpr uint64_t kReservedPerMemory = 2;

  // `now_ticks` tells the current time on the clock of KernelIdentity::start_ticks.
  PhysicalMemory(MemoryManager& memory, hal::Backend& backend,
                 std::function<uint64_t()> now_ticks);

  // aclrtMallocPhysical: `size` bytes on `device`, rounded up to its
  // granularity, of huge pages or normal ones (as the program asked: the sim
  // has one granularity for both). Answers the handle.
  absl::StatusOr<uint64_t> Allocate(SessionId session, int32_t device, uint64_t size,
                                    bool huge_pages);
  // aclrtFreePhysical: drops one reference (aclrtMemRetainAllocationHandle
  // adds them). With the last, mappings of the handle keep its memory until
  // they go, and an owner's free ends its export and revokes every import.
  absl::Status Free(SessionId session, uint64_t handle);
  // aclrtMemRetainAllocationHandle: the handle mapped at `address` (the
  // start of a mapping), with one more reference.
  absl::StatusOr<uint64_t> Retain(SessionId session, uint64_t address);
  // aclrtMemGetAllocationPropertiesFromHandle.
  struct Properties {
    int32_t device = 0;
    bool huge_pages = false;
  };
  absl::StatusOr<Properties> PropertiesOf(SessionId session, uint64_t handle);
  // aclrtMemGetAccess: whether `device` reaches the mapping at `address`.
  absl::StatusOr<bool> Readable(SessionId session, uint64_t address, int32_t device);

  // aclrtReserveMemAddress on `device` (the caller's current device), `size`
  // rounded up to the granularity.
  absl::StatusOr<uint64_t> Reserve(SessionId session, int32_t device, uint64_t size);
  // aclrtReleaseMemAddress: `address` starts a reservation with no mapping left.
  absl::Status Release(SessionId session, uint64_t address);

  // aclrtMapMem (`accessible`) and aclrtMemMapNoAccess: the whole of the
  // handle's memory at `address`, inside one reservation of the same device,
  // at a multiple of the granularity, overlapping no other mapping. As in
  // CANN, `size` is the handle's size and `offset` 0.
  absl::Status Map(SessionId session, uint64_t address, uint64_t size, uint64_t offset,
                   uint64_t handle, bool accessible);
  // aclrtUnmapMem: `address` starts a mapping.
  absl::Status Unmap(SessionId session, uint64_t address);
  // aclrtMemSetAccess for `device`: [address, +size) is one mapping; device
  // work reaches it while `readwrite`.
  absl::Status SetAccess(SessionId session, uint64_t address, uint64_t size, int32_t device,
                         bool readwrite);

  // aclrtMemExportToShareableHandle of one of the session's own handles
  // (once per handle).
  absl::StatusOr<uint64_t> Export(SessionId session, uint64_t handle, bool pid_validation);
  absl::Status SetImportPids(SessionId owner, uint64_t shareable,
                             const std::vector<int32_t>& pids);
  // aclrtMemImportFromShareableHandle on `device` (the memory's device), by
  // another process: answers a handle of the importer's.
  absl::StatusOr<uint64_t> Import(const KernelIdentity& importer, uint64_t shareable,
                                  int32_t device);

  // A reset of `device` (or, without one, the end of the session): what it
  // held there goes, its own handles' imports revoked. The memory whose last
  // hold went is returned, for the caller to let go of once it holds no lock
  // (freeing gigabytes takes a while, and the caller holds the runtime's).
  using Dropped = std::vector<std::shared_ptr<void>>;
  [[nodiscard]] Dropped Released(SessionId session, std::optional<int32_t> device);
  [[nodiscard]] Dropped SessionEnded(SessionId session);

  // What a session holds here, for operators (aclctl --json sessions).
  struct Usage {
    uint32_t handles = 0;
    uint32_t reservations = 0;
    uint32_t mappings = 0;
    uint64_t reserved_bytes = 0;  // addresses, on every device
  };
  Usage UsageOf(SessionId session) const;

  struct ImportView {
    SessionId session = 0;
    bool mapped = false;
  };
  struct ExportView {
    std::string key_prefix;  // the top 16 bits in hex, enough to tell them apart
    SessionId owner = 0;
    int32_t device = 0;
    uint64_t size = 0;
    bool pid_validation = true;
    std::vector<int32_t> whitelist;
    std::vector<ImportView> imports;
  };
  std::vector<ExportView> Snapshot() const;

 private:
  // A session's hold on one physical allocation: its own, or an import.
  // Mappings share it, so a freed handle's memory stays while mapped.
  struct Handle {
    SessionId owner = 0;  // the session that allocated the memory
    int32_t device = 0;
    uint64_t size = 0;
    bool huge_pages = false;
    size_t references = 1;  // Free calls to come (Retain adds one)
    ResolvedRange memory;  // the allocation and its keepalive; empty once revoked
    std::string revoked;   // why the owner took an import away
    size_t mappings = 0;
    // The owner's: the shareable handle it is exported as (0: none). An
    // import's: the one it came from.
    uint64_t shareable = 0;
  };
  struct Mapping {
    uint64_t size = 0;
    std::shared_ptr<Handle> handle;
    bool accessible = false;
  };
  struct Reservation {
    int32_t device = 0;
    uint64_t size = 0;
    std::map<uint64_t, Mapping> mappings;  // by address
  };
  struct Holdings {
    std::map<uint64_t, std::shared_ptr<Handle>> handles;
    std::map<uint64_t, Reservation> reservations;  // by start address
    std::map<int32_t, uint64_t> reserved_bytes;    // by device
    size_t mappings = 0;
    size_t exports = 0;
    // Shareable handles whose whitelist has an entry bound to the session:
    // its end looks at these only, not at every export on the host.
    std::set<uint64_t> bound;
    size_t whitelist_entries = 0;  // what its exports' whitelists hold
  };
  struct ImportHeld {
    SessionId session = 0;
    std::shared_ptr<Handle> handle;
  };
  struct Exported {
    std::shared_ptr<Handle> handle;  // the owner's
    bool pid_validation = true;
    KernelWhitelist whitelist;
    std::map<const Handle*, ImportHeld> imports;  // by the importer's handle
  };

  absl::StatusOr<std::shared_ptr<Handle>> HandleLocked(SessionId session, uint64_t handle,
                                                       const char* api)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The reservation of `session` holding [address, +size), or an error.
  absl::StatusOr<std::pair<const uint64_t, Reservation>*> ReservationLocked(
      SessionId session, uint64_t address, uint64_t size, const char* api)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The device's granularity (0: it manages no virtual addresses).
  uint64_t GranularityOf(int32_t device) const;
  // `size` rounded up to the device's granularity; FEATURE_NOT_SUPPORT when
  // the device manages no virtual addresses, INVALID_PARAM for 0 or a size
  // that would overflow.
  absl::StatusOr<uint64_t> RoundedSize(int32_t device, uint64_t size, const char* api) const;
  // The mapping that starts at `address`, and its reservation.
  struct MappingAt {
    Reservation* reservation;
    Mapping* mapping;
  };
  absl::StatusOr<MappingAt> MappingAtLocked(SessionId session, uint64_t address, const char* api)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The memory manager's view of one mapping follows its access and its
  // handle's revocation.
  void ApplyLocked(SessionId session, uint64_t address, const Mapping& mapping)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `handle` leaves `session`'s handles: an owner's ends its exports and
  // revokes their imports; an importer's leaves its export.
  void DropHandleLocked(SessionId session, const std::shared_ptr<Handle>& handle,
                        const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnmapLocked(SessionId session, Reservation& reservation, uint64_t address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The reservation's addresses go back to the device (it has no mapping left).
  void ReleaseLocked(SessionId session, uint64_t address, const Reservation& reservation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // mu_, held for a call: what the call let go of (Drop) goes once mu_ is
  // released, or to `out` for the caller to let go of later. Freeing a
  // handle's memory under mu_ made every physical memory call wait for it.
  class ABSL_SCOPED_LOCKABLE DroppingLock {
   public:
    explicit DroppingLock(const PhysicalMemory* memory, Dropped* out = nullptr)
        ABSL_EXCLUSIVE_LOCK_FUNCTION(memory->mu_);
    ~DroppingLock() ABSL_UNLOCK_FUNCTION();

   private:
    const PhysicalMemory* memory_;
    Dropped* out_;
  };
  // Keeps what `held` holds until the lock goes (DroppingLock).
  void DropLocked(std::shared_ptr<void> held) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (held != nullptr) dropped_.push_back(std::move(held));
  }

  MemoryManager& memory_;
  hal::Backend& backend_;
  const std::function<uint64_t()> now_ticks_;
  mutable absl::Mutex mu_;
  mutable Dropped dropped_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, Holdings> holdings_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Exported> exports_ ABSL_GUARDED_BY(mu_);  // by shareable handle
  uint64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PHYSICAL_MEMORY_H_
