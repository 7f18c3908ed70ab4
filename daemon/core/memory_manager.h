// Device memory owned by sessions, and the address checks every device access
// goes through.
//
// Each allocation belongs to exactly one session. Resolve() is the only way to
// turn a device address into bytes, and it refuses any range that is not
// entirely inside one of the caller's live allocations: another session's
// memory, freed memory and past-the-end ranges all fail the same way.
//
// An allocation may be shared (daemon/core/memory_exports.h): the owner
// grants another session one range of it, which that session then resolves
// like its own until the grant is revoked or the allocation is freed. Nothing
// else of the allocation, and nothing of any other, becomes reachable.
//
// Virtual address management (daemon/core/physical_memory.h) adds two
// kinds of memory: physical allocations, which have no address of their own,
// and mappings, ranges of reserved addresses a session resolves into part of
// one physical allocation.
//
// A resolved range pins its allocation: aclrtFree (or a reset, or the end of
// the session) removes the address at once, but the device memory is released
// — and stays charged to its session and user — until the last task that
// resolved it has finished. So a free never races a kernel into freed memory.
//
// Revocation notices: an importer's process may launch work on a shared range
// that acld has not received yet (it sits in the process's batch) when the
// exporter takes the range away. For a process that takes notice of
// revocations (TellRevocations), a revoked range stays resolvable, and its
// memory alive, until the process says it saw the notice (RevocationSeen):
// what it sent before that completes on the memory; what it sends after fails
// naming the reason. The owner of the notices bounds how long that lasts.
#ifndef ACLD_DAEMON_CORE_MEMORY_MANAGER_H_
#define ACLD_DAEMON_CORE_MEMORY_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/quota_group.h"
#include "daemon/core/release_fence.h"
#include "daemon/core/session_id.h"
#include "daemon/core/tenant.h"
#include "hal/backend.h"

namespace acld {

// Device memory a task may touch (its buffer and the offset into it), kept
// alive (and charged) while the task holds `keepalive`.
struct ResolvedRange {
  hal::DeviceSpan span;
  int32_t device = 0;
  std::shared_ptr<void> keepalive;
  // Bytes from span.address() the caller may touch: to the end of its own
  // allocation or mapping, or of the range it imported (not of the
  // exporter's whole allocation).
  uint64_t reachable = 0;
};

class MemoryManager {
 public:
  explicit MemoryManager(hal::Backend& backend);

  // A new session of user `uid`, with the default quota, or in quota group
  // `group`, whose limits then hold instead.
  void AddSession(SessionId session, uint32_t uid, std::shared_ptr<QuotaGroup> group = nullptr);

  // Allocates `size` bytes on `device` for `session`, within the device's free
  // memory, the session's quota and its user's (all charged by what the
  // device reserves, not by what was asked).
  absl::StatusOr<uint64_t> Allocate(SessionId session, int32_t device, uint64_t size);
  absl::Status Free(SessionId session, uint64_t address);

  // Memory charged like Allocate that no address of the session reaches: a
  // physical allocation until it is mapped (`api` aclrtMallocPhysical), a
  // launch's placeholder data. The span of all of it, and the keepalive that
  // holds it (released when the last holder lets go).
  absl::StatusOr<ResolvedRange> AllocateHeld(SessionId session, int32_t device, uint64_t size,
                                             const char* api);
  // Charges `session` like Allocate for `size` bytes that the backend
  // allocates on `device` itself for the session's work (an acl stream's
  // kernel argument ring, hal::StreamOptions::charge_memory), until the
  // returned handle goes. Null for 0 bytes.
  absl::StatusOr<std::shared_ptr<void>> ChargeBackendMemory(SessionId session, int32_t device,
                                                            uint64_t size, const char* api);
  // `session` resolves [address, address + physical.span's remaining bytes)
  // to `physical` from now on. The caller keeps mappings from overlapping one
  // another (they lie in reservations no allocation shares).
  void Map(SessionId session, uint64_t address, uint64_t bytes, const ResolvedRange& physical);
  // Ends the mapping at `address`. With a `reason`, a later use fails naming
  // it (shared memory its exporter took away). Work that resolved it keeps
  // its pin.
  void Unmap(SessionId session, uint64_t address, const std::string& reason = "");

  // [address, address + bytes) inside one live allocation of `session`, a
  // range granted to it, or a mapping of its own.
  absl::StatusOr<ResolvedRange> Resolve(SessionId session, uint64_t address, uint64_t bytes) const;
  // What a launch whose ranges the backend cannot tell holds until the
  // device reported or dropped it: memory `session` lets go meanwhile (a
  // free, a reset, its end, an import taken away) is released only after
  // (release_fence.h). Null once the session ended.
  std::shared_ptr<void> HoldForOpaqueWork(SessionId session);

  // Whether `range` (from Resolve) lies in an allocation of `session` itself:
  // not memory another session granted it, which only that one may share.
  bool IsOwnAllocation(SessionId session, const ResolvedRange& range) const;

  // Imports of one allocation at once, over all its keys: its free or its
  // owner's end revokes them all under the manager's lock, which every copy
  // and launch of every session takes.
  static constexpr size_t kMaxGrantsPerAllocation = 1024;

  // Sharing. `allocation` is a range's keepalive from Resolve by the owner;
  // `importer` may then resolve [address, address + bytes) of it. Refused
  // once the owner freed the allocation, once `importer` was removed, or
  // past kMaxGrantsPerAllocation.
  absl::Status Grant(const std::weak_ptr<void>& allocation, uint64_t address, uint64_t bytes,
                     SessionId importer);
  // Whether Grant would grant now (MemoryExports asks before a whitelist
  // entry binds to the importer, so that only a race refuses it after).
  absl::Status GrantRoom(const std::weak_ptr<void>& allocation, uint64_t address,
                         SessionId importer) const;
  // Whether `allocation` (at `address`) is still allocated: not freed, nor
  // taken away by its owner's reset or end (it may still be pinned).
  bool IsAllocated(const std::weak_ptr<void>& allocation, uint64_t address) const;
  // Ends one grant of [address, +bytes) of `allocation` (as given to Grant)
  // to each of `importers`, in one pass over the allocation's grants (an
  // export's end revokes up to kMaxGrantsPerAllocation at once, under the
  // lock every copy takes); a later use of it fails with `reason` in its
  // message. Work that resolved it already keeps its pin. Nothing when the
  // allocation is gone: another may have its address now (freeing it took
  // its grants away). `by_exporter`: the exporter took it away, and an
  // importer that takes notice of revocations is told first.
  void Revoke(const std::vector<SessionId>& importers, const std::weak_ptr<void>& allocation,
              uint64_t address, uint64_t bytes, const std::string& reason, bool by_exporter);
  // Ends `importer`'s mapping at `address` of memory its exporter took away
  // (as Unmap with a reason, after a notice as Revoke).
  void RevokeMapping(SessionId importer, uint64_t address, const std::string& reason);

  // `importer`'s process takes notice of revocations: `tell` hears of each
  // (outside the manager's lock), and the range stays until RevocationSeen.
  using RevocationNotice = std::function<void(uint64_t notice, const std::string& reason)>;
  void TellRevocations(SessionId importer, RevocationNotice tell);
  // `importer`'s process saw `notice` (or its owner stops waiting): the
  // revoked range goes now. False for a notice that is not `importer`'s (or
  // no longer pending), which changes nothing.
  bool RevocationSeen(SessionId importer, uint64_t notice);
  // How many revoked ranges `importer` still resolves, awaiting its notice.
  size_t NoticedRangesOf(SessionId importer) const;

  // Frees every allocation of `session` (on `device` only, when given): its
  // addresses go now, its memory once the result (and every task's pin) is
  // let go, which a caller holding a lock others wait for does after it.
  std::vector<std::shared_ptr<void>> ReleaseSession(SessionId session,
                                                    std::optional<int32_t> device = std::nullopt);
  // The session is gone: its memory and its quota.
  void RemoveSession(SessionId session);

  // 0 means no quota. A quota set for one session by the operator is that
  // session's own grant; sessions on the default quota also share it per user,
  // so a user cannot multiply it by opening more processes.
  void SetQuota(SessionId session, uint64_t bytes);
  void SetDefaultQuota(uint64_t bytes);
  // How many allocations (aclrtMalloc and aclrtMallocPhysical, freed ones
  // that tasks still pin included) one session, and all sessions of one
  // tenant together (tenant.h), may hold; 0: no limit.
  void SetMaxAllocations(uint64_t per_session, uint64_t per_tenant = 0);
  // What each tenant holding any allocations holds (pinned frees included).
  std::map<Tenant, uint64_t> AllocationsByTenant() const;
  uint64_t MaxAllocationsPerTenant() const;

  struct SessionUsage {
    uint64_t bytes = 0;  // reserved on the devices, frees still in flight included
    uint64_t allocations = 0;
    uint64_t quota = 0;
    uint64_t max_allocations = 0;  // 0: no limit
  };
  SessionUsage UsageOf(SessionId session) const;

 private:
  struct Ledger;
  struct Block;
  struct BackendCharge;
  // Why a session's shared range went away, for its next failed use.
  struct Revocation {
    uint64_t bytes = 0;
    std::string reason;
  };
  static constexpr size_t kRevocationsKept = 64;  // per session

  void NoteRevokedLocked(SessionId importer, uint64_t address, uint64_t bytes,
                         const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `session` reaches `address` again: an old note no longer explains it.
  void ForgetRevocationLocked(SessionId session, uint64_t address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `block` from `offset` on, holding it.
  static ResolvedRange GrantedRange(const std::shared_ptr<Block>& block, uint64_t offset);
  // Every grant of a block leaving the live allocations is revoked.
  void RevokeGrantsLocked(const std::shared_ptr<Block>& block, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes [address, +bytes), which is `range`, from `importer` because its
  // exporter revoked it: at once, or, for a process that takes notice,
  // once it saw the notice.
  void RevokeFromImporterLocked(SessionId importer, uint64_t address, uint64_t bytes,
                                const ResolvedRange& range, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `session` lets go of `memory`: it stays until the session's opaque
  // launches made so far are done.
  void DeferLocked(SessionId session, const std::shared_ptr<void>& memory)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the notices made under the lock; called without it.
  void TellUntold() ABSL_LOCKS_EXCLUDED(mu_);

  // A revoked range its importer still resolves until it saw the notice.
  struct NoticedRange {
    SessionId importer;
    uint64_t address;
    uint64_t bytes;
    ResolvedRange range;  // holds the memory
    std::string reason;
  };
  struct Untold {
    RevocationNotice tell;
    uint64_t notice;
    std::string reason;
  };

  struct Mapping {
    SessionId session;
    uint64_t bytes;
    ResolvedRange physical;
  };
  // Drops `address` from `session`'s entries in `index`.
  static void Unindex(std::map<SessionId, std::set<uint64_t>>& index, SessionId session,
                      uint64_t address);
  // The live allocation at `address` if it is `held`; null otherwise.
  Block* LiveBlockLocked(const std::shared_ptr<void>& held, uint64_t address) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status GrantRoomLocked(const Block* block, SessionId importer) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // What `device` reserves for `size` bytes; an error naming `api` when it
  // has not that much.
  absl::StatusOr<uint64_t> ReservedOn(int32_t device, uint64_t size, const char* api) const;
  // A block charged to `session`, not yet reachable by any address.
  absl::StatusOr<std::shared_ptr<Block>> NewBlock(SessionId session, int32_t device,
                                                  uint64_t size, const char* api);

  hal::Backend& backend_;
  const std::shared_ptr<Ledger> ledger_;  // also held by every block, which may outlive us
  // Where the fences' large releases run (also held by every fence).
  const std::shared_ptr<BackgroundRelease> background_release_ =
      std::make_shared<BackgroundRelease>();
  mutable absl::Mutex mu_;
  // Live allocations by start address; a task's pin is another reference.
  std::map<uint64_t, std::shared_ptr<Block>> allocations_ ABSL_GUARDED_BY(mu_);
  // By start address; they never overlap one another or an allocation.
  std::map<uint64_t, Mapping> mappings_ ABSL_GUARDED_BY(mu_);
  // The start addresses of each session's entries in the two maps above, so
  // that a session's end visits its own only.
  std::map<SessionId, std::set<uint64_t>> allocations_of_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, std::set<uint64_t>> mappings_of_ ABSL_GUARDED_BY(mu_);
  // By importing session, by start address. A session has an entry from
  // AddSession to RemoveSession, and only then: the entry also tells which
  // sessions still live, so that nothing is granted or noted for an ended
  // one by a call that was still in flight at its end.
  std::map<SessionId, std::map<uint64_t, Revocation>> revocations_ ABSL_GUARDED_BY(mu_);
  // Per session, from AddSession to RemoveSession, as revocations_.
  std::map<SessionId, ReleaseFence> fences_ ABSL_GUARDED_BY(mu_);
  // Sessions that take notice of revocations, and how they are told.
  std::map<SessionId, RevocationNotice> noticing_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, NoticedRange> noticed_ ABSL_GUARDED_BY(mu_);  // by notice
  uint64_t next_notice_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<Untold> untold_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_MEMORY_MANAGER_H_
