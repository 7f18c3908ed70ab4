#include "daemon/core/memory_manager.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

// What each session and user is charged, shared with the blocks so that a
// block released after its session ended still gives its bytes back.
struct MemoryManager::Ledger {
  struct Account {
    uint32_t uid = 0;
    uint64_t bytes = 0;
    uint64_t allocations = 0;
    uint64_t quota = 0;
    bool own_quota = false;  // set by the operator for this session
    std::shared_ptr<QuotaGroup> group;  // none: the session is in no quota group
  };

  // Who a block's bytes were charged to, for giving them back.
  struct Charged {
    uint32_t uid = 0;
    std::shared_ptr<QuotaGroup> group;
  };

  // Charges `bytes` (reserved on `device` for `size` asked) to `session`,
  // and to its quota group or else its user, or to none of them.
  absl::StatusOr<Charged> Charge(SessionId session, int32_t device, uint64_t bytes, uint64_t size,
                                 const char* api) {
    absl::MutexLock lock(&mu);
    auto it = accounts.find(session);
    if (it == accounts.end()) {
      return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, absl::StrCat(api, ": the session has ended"));
    }
    Account& account = it->second;
    // Each allocation holds acld's memory (its record, the device's), and a
    // session's end walks them all: their count is bounded as well as their
    // bytes, since 512-byte blocks would otherwise come by the million.
    if (max_allocations != 0 && account.allocations >= max_allocations) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat(api, ": this process holds ", account.allocations,
                                    " device memory allocations, the most acld allows one "
                                    "process (--max_allocations_per_session); free some first"));
    }
    // Per session alone, a user's 256 sessions would hold 16 M of them.
    const Tenant tenant(account.uid, account.group);
    if (!allocations_by_tenant.Fits(tenant, 1)) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat(api, ": the processes of ", tenant.ToString(), " hold ",
                                    allocations_by_tenant.Of(tenant),
                                    " device memory allocations together, the most acld allows "
                                    "one user (--max_allocations_per_uid); free some first"));
    }
    if (account.quota != 0 && bytes > account.quota - std::min(account.quota, account.bytes)) {
      return AclStatus(
          ACL_ERROR_RT_MEMORY_ALLOCATION,
          absl::StrCat(api, ": ", size, " bytes (", bytes, " reserved on the device) would "
                       "exceed this process's device memory quota of ", account.quota, " bytes (",
                       account.bytes, " in use); the operator sets it with "
                       "--default_memory_quota or aclctl quota"));
    }
    // A group's limits replace the per-user default, and its bytes are the
    // group's, not its uid's: in pods everyone is uid 0, and neither a pod
    // nor the host's processes of that uid may use up the other's share.
    if (account.group != nullptr) {
      ACL_RETURN_IF_ERROR(account.group->ChargeMemory(device, bytes, size, api));
    } else {
      const uint64_t user_bytes = UserBytesLocked(account.uid);
      if (!account.own_quota && default_quota != 0 &&
          bytes > default_quota - std::min(default_quota, user_bytes)) {
        return AclStatus(
            ACL_ERROR_RT_MEMORY_ALLOCATION,
            absl::StrCat(api, ": ", size, " bytes would exceed the device memory quota of uid ",
                         account.uid, ": ", default_quota,
                         " bytes for all of its processes together (", user_bytes,
                         " in use; --default_memory_quota)"));
      }
      by_uid[account.uid] += bytes;
    }
    account.bytes += bytes;
    ++account.allocations;
    allocations_by_tenant.Add(tenant, 1);
    return Charged{account.uid, account.group};
  }

  void Uncharge(SessionId session, const Charged& charged, int32_t device, uint64_t bytes) {
    if (charged.group != nullptr) charged.group->UnchargeMemory(device, bytes);
    absl::MutexLock lock(&mu);
    auto it = accounts.find(session);
    if (it != accounts.end()) {
      it->second.bytes -= bytes;
      --it->second.allocations;
    }
    allocations_by_tenant.Subtract(Tenant(charged.uid, charged.group), 1);
    if (charged.group != nullptr) return;
    auto user = by_uid.find(charged.uid);
    if (user != by_uid.end() && (user->second -= bytes) == 0) by_uid.erase(user);
  }

  uint64_t UserBytesLocked(uint32_t uid) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = by_uid.find(uid);
    return it == by_uid.end() ? 0 : it->second;
  }

  absl::Mutex mu;
  std::map<SessionId, Account> accounts ABSL_GUARDED_BY(mu);
  std::map<uint32_t, uint64_t> by_uid ABSL_GUARDED_BY(mu);
  uint64_t default_quota ABSL_GUARDED_BY(mu) = 0;
  // Per session, freed blocks still pinned by tasks included; 0: no limit.
  uint64_t max_allocations ABSL_GUARDED_BY(mu) = 0;
  // The same, for all sessions of a tenant together (tenant.h).
  TenantTally allocations_by_tenant ABSL_GUARDED_BY(mu);
};

// One allocation. Destroyed when it was freed and no task pins it any more:
// only then does the device get its memory back and the owner its charge.
struct MemoryManager::Block {
  ~Block() {
    device->Free(buffer);
    ledger->Uncharge(session, charged, device_id, buffer.reserved);
  }
  hal::Device* device;
  int32_t device_id;
  SessionId session;
  Ledger::Charged charged;
  hal::DeviceBuffer buffer;
  std::shared_ptr<Ledger> ledger;
  // Ranges other sessions may resolve (MemoryManager::Grant); guarded by the
  // manager's mu_.
  struct SharedRange {
    SessionId importer;
    uint64_t offset;
    uint64_t bytes;
  };
  std::vector<SharedRange> grants;
};

MemoryManager::MemoryManager(hal::Backend& backend)
    : backend_(backend), ledger_(std::make_shared<Ledger>()) {}

void MemoryManager::AddSession(SessionId session, uint32_t uid,
                               std::shared_ptr<QuotaGroup> group) {
  absl::MutexLock lock(&ledger_->mu);
  Ledger::Account& account = ledger_->accounts[session];
  account.uid = uid;
  // A group's limits replace the default quota (the operator may still set
  // one for the session).
  account.quota = group == nullptr ? ledger_->default_quota : 0;
  account.group = std::move(group);
  absl::MutexLock memory_lock(&mu_);
  revocations_.try_emplace(session);
  fences_.try_emplace(session, background_release_);
}

std::shared_ptr<void> MemoryManager::HoldForOpaqueWork(SessionId session) {
  absl::ReaderMutexLock lock(&mu_);  // the fence has a lock of its own
  const auto& fences = fences_;
  auto fence = fences.find(session);
  if (fence == fences.end()) return nullptr;
  return fence->second.Hold();
}

void MemoryManager::DeferLocked(SessionId session, const std::shared_ptr<void>& memory) {
  auto fence = fences_.find(session);
  if (fence != fences_.end()) fence->second.Defer(memory);
}

absl::StatusOr<uint64_t> MemoryManager::ReservedOn(int32_t device_id, uint64_t size,
                                                    const char* api) const {
  const hal::Device& device = backend_.device(device_id);
  const std::optional<uint64_t> reserved = device.ReservedBytes(size);
  if (!reserved.has_value()) {
    return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     absl::StrCat(api, ": ", size, " bytes is more than the device has (",
                                  device.info().memory_bytes, " bytes)"));
  }
  return *reserved;
}

// What the backend keeps for a session: charged as one allocation until it
// goes, like a Block whose memory the backend allocated itself.
struct MemoryManager::BackendCharge {
  ~BackendCharge() { ledger->Uncharge(session, charged, device_id, reserved); }
  int32_t device_id;
  SessionId session;
  Ledger::Charged charged;
  uint64_t reserved;
  std::shared_ptr<Ledger> ledger;
};

absl::StatusOr<std::shared_ptr<void>> MemoryManager::ChargeBackendMemory(SessionId session,
                                                                        int32_t device_id,
                                                                        uint64_t size,
                                                                        const char* api) {
  if (size == 0) return std::shared_ptr<void>();
  ACL_ASSIGN_OR_RETURN(const uint64_t reserved, ReservedOn(device_id, size, api));
  ACL_ASSIGN_OR_RETURN(Ledger::Charged charged,
                       ledger_->Charge(session, device_id, reserved, size, api));
  return std::shared_ptr<void>(
      new BackendCharge{device_id, session, std::move(charged), reserved, ledger_});
}

absl::StatusOr<std::shared_ptr<MemoryManager::Block>> MemoryManager::NewBlock(
    SessionId session, int32_t device_id, uint64_t size, const char* api) {
  if (size == 0) return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": size must be > 0"));
  hal::Device& device = backend_.device(device_id);
  ACL_ASSIGN_OR_RETURN(const uint64_t reserved, ReservedOn(device_id, size, api));
  // Charged before the device allocates, so that concurrent calls cannot
  // together pass a quota that each alone respects.
  ACL_ASSIGN_OR_RETURN(Ledger::Charged charged,
                       ledger_->Charge(session, device_id, reserved, size, api));
  absl::StatusOr<hal::DeviceBuffer> buffer = device.Allocate(size);
  if (!buffer.ok()) {
    ledger_->Uncharge(session, charged, device_id, reserved);
    return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     absl::StrCat(api, ": ", buffer.status().message()));
  }
  // Built in place: a temporary Block would give the memory back when destroyed.
  return std::shared_ptr<Block>(
      new Block{&device, device_id, session, std::move(charged), *std::move(buffer), ledger_});
}

absl::StatusOr<uint64_t> MemoryManager::Allocate(SessionId session, int32_t device_id,
                                                 uint64_t size) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Block> block,
                       NewBlock(session, device_id, size, "aclrtMalloc"));
  const uint64_t address = block->buffer.address;
  absl::MutexLock lock(&mu_);
  allocations_.emplace(address, std::move(block));
  allocations_of_[session].insert(address);
  return address;
}

absl::StatusOr<ResolvedRange> MemoryManager::AllocateHeld(SessionId session, int32_t device_id,
                                                          uint64_t size, const char* api) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Block> block, NewBlock(session, device_id, size, api));
  hal::DeviceSpan span{block->buffer, 0};
  const uint64_t reachable = block->buffer.size;
  return ResolvedRange{std::move(span), device_id, std::move(block), reachable};
}

void MemoryManager::Map(SessionId session, uint64_t address, uint64_t bytes,
                        const ResolvedRange& physical) {
  ResolvedRange replaced;  // its keepalive goes after the lock
  absl::MutexLock lock(&mu_);
  auto [it, added] = mappings_.try_emplace(address, Mapping{session, bytes, physical});
  if (!added) {
    Unindex(mappings_of_, it->second.session, address);
    DeferLocked(it->second.session, it->second.physical.keepalive);
    replaced = std::move(it->second.physical);
    it->second = Mapping{session, bytes, physical};
  }
  mappings_of_[session].insert(address);
  ForgetRevocationLocked(session, address);
}

void MemoryManager::Unmap(SessionId session, uint64_t address, const std::string& reason) {
  ResolvedRange unmapped;  // its keepalive goes after the lock
  absl::MutexLock lock(&mu_);
  auto it = mappings_.find(address);
  if (it == mappings_.end() || it->second.session != session) return;
  if (!reason.empty()) NoteRevokedLocked(session, address, it->second.bytes, reason);
  DeferLocked(session, it->second.physical.keepalive);
  unmapped = std::move(it->second.physical);
  mappings_.erase(it);
  Unindex(mappings_of_, session, address);
}

absl::Status MemoryManager::Free(SessionId session, uint64_t address) {
  std::shared_ptr<Block> freed;  // released after the lock, when no task pins it
  {
    absl::MutexLock lock(&mu_);
    auto it = allocations_.find(address);
    if (it == allocations_.end() || it->second->session != session) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrFormat("aclrtFree: 0x%x is not the start of a live allocation of "
                                       "this process (freed already, or never allocated here)",
                                       address));
    }
    DeferLocked(session, it->second);
    freed = std::move(it->second);
    allocations_.erase(it);
    Unindex(allocations_of_, session, address);
    RevokeGrantsLocked(freed, "the exporting process freed it");
  }
  TellUntold();
  return absl::OkStatus();
}

MemoryManager::Block* MemoryManager::LiveBlockLocked(const std::shared_ptr<void>& held,
                                                    uint64_t address) const {
  if (held == nullptr) return nullptr;
  auto it = allocations_.upper_bound(address);
  // Still live: a freed block may linger while tasks pin it.
  if (it == allocations_.begin() || std::prev(it)->second != held) return nullptr;
  return std::prev(it)->second.get();
}

absl::Status MemoryManager::GrantRoom(const std::weak_ptr<void>& allocation, uint64_t address,
                                      SessionId importer) const {
  const std::shared_ptr<void> held = allocation.lock();  // released after the lock
  absl::ReaderMutexLock lock(&mu_);
  return GrantRoomLocked(LiveBlockLocked(held, address), importer);
}

bool MemoryManager::IsAllocated(const std::weak_ptr<void>& allocation, uint64_t address) const {
  const std::shared_ptr<void> held = allocation.lock();  // released after the lock
  absl::ReaderMutexLock lock(&mu_);
  return LiveBlockLocked(held, address) != nullptr;
}

absl::Status MemoryManager::GrantRoomLocked(const Block* block, SessionId importer) const {
  if (block == nullptr) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "the shared memory was freed by the process that exported it");
  }
  // An import still in flight when its process ended: granting would leave
  // the dead session a reach into the exporter's memory that nothing ends.
  if (revocations_.count(importer) == 0) {
    return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "the importing process ended");
  }
  if (block->grants.size() >= kMaxGrantsPerAllocation) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat("the shared memory is imported ", block->grants.size(),
                                  " times already, the most one allocation may be"));
  }
  return absl::OkStatus();
}

absl::Status MemoryManager::Grant(const std::weak_ptr<void>& allocation, uint64_t address,
                                  uint64_t bytes, SessionId importer) {
  const std::shared_ptr<void> held = allocation.lock();  // released after the lock
  absl::MutexLock lock(&mu_);
  Block* block = LiveBlockLocked(held, address);
  ACL_RETURN_IF_ERROR(GrantRoomLocked(block, importer));
  block->grants.push_back(Block::SharedRange{importer, address - block->buffer.address, bytes});
  ForgetRevocationLocked(importer, address);
  return absl::OkStatus();
}

void MemoryManager::Revoke(const std::vector<SessionId>& importers,
                           const std::weak_ptr<void>& allocation, uint64_t address,
                           uint64_t bytes, const std::string& reason, bool by_exporter) {
  const std::shared_ptr<void> held = allocation.lock();  // released after the lock
  if (held == nullptr || importers.empty()) return;
  // One grant each: a session that imported two keys of the same range
  // holds two, and closing one leaves the other.
  std::multiset<SessionId> pending(importers.begin(), importers.end());
  {
    absl::MutexLock lock(&mu_);
    auto it = allocations_.upper_bound(address);
    if (it == allocations_.begin() || std::prev(it)->second != held) return;
    const std::shared_ptr<Block>& block = std::prev(it)->second;
    auto& grants = block->grants;
    for (auto grant = grants.begin(); grant != grants.end() && !pending.empty();) {
      auto importer = pending.find(grant->importer);
      if (importer != pending.end() && block->buffer.address + grant->offset == address &&
          grant->bytes == bytes) {
        const SessionId session = *importer;
        pending.erase(importer);
        DeferLocked(session, block);
        if (by_exporter) {
          RevokeFromImporterLocked(session, address, grant->bytes,
                                   GrantedRange(block, grant->offset), reason);
        } else {
          NoteRevokedLocked(session, address, grant->bytes, reason);
        }
        grant = grants.erase(grant);
      } else {
        ++grant;
      }
    }
  }
  TellUntold();
}

void MemoryManager::RevokeMapping(SessionId importer, uint64_t address,
                                  const std::string& reason) {
  ResolvedRange unmapped;  // its keepalive goes after the lock
  {
    absl::MutexLock lock(&mu_);
    auto it = mappings_.find(address);
    if (it == mappings_.end() || it->second.session != importer) return;
    DeferLocked(importer, it->second.physical.keepalive);
    unmapped = std::move(it->second.physical);
    RevokeFromImporterLocked(importer, address, it->second.bytes, unmapped, reason);
    mappings_.erase(it);
    Unindex(mappings_of_, importer, address);
  }
  TellUntold();
}

ResolvedRange MemoryManager::GrantedRange(const std::shared_ptr<Block>& block, uint64_t offset) {
  return ResolvedRange{hal::DeviceSpan{block->buffer, offset}, block->device_id, block,
                       block->buffer.size - offset};
}

void MemoryManager::RevokeGrantsLocked(const std::shared_ptr<Block>& block,
                                       const std::string& reason) {
  for (const Block::SharedRange& grant : block->grants) {
    DeferLocked(grant.importer, block);
    RevokeFromImporterLocked(grant.importer, block->buffer.address + grant.offset, grant.bytes,
                             GrantedRange(block, grant.offset), reason);
  }
}

void MemoryManager::RevokeFromImporterLocked(SessionId importer, uint64_t address,
                                             uint64_t bytes, const ResolvedRange& range,
                                             const std::string& reason) {
  auto noticing = noticing_.find(importer);
  if (noticing == noticing_.end()) {
    NoteRevokedLocked(importer, address, bytes, reason);
    return;
  }
  const uint64_t notice = next_notice_++;
  noticed_[notice] = NoticedRange{importer, address, bytes, range, reason};
  untold_.push_back(Untold{noticing->second, notice, reason});
}

void MemoryManager::TellUntold() {
  std::vector<Untold> untold;
  {
    absl::MutexLock lock(&mu_);
    untold.swap(untold_);
  }
  for (const Untold& notice : untold) notice.tell(notice.notice, notice.reason);
}

void MemoryManager::TellRevocations(SessionId importer, RevocationNotice tell) {
  absl::MutexLock lock(&mu_);
  // A session that ended meanwhile (its end may run beside the request that
  // asked for notices) is told nothing: an entry made now would stay.
  if (revocations_.count(importer) == 0) return;
  noticing_[importer] = std::move(tell);
}

bool MemoryManager::RevocationSeen(SessionId importer, uint64_t notice) {
  ResolvedRange released;  // its keepalive goes after the lock
  absl::MutexLock lock(&mu_);
  auto it = noticed_.find(notice);
  if (it == noticed_.end() || it->second.importer != importer) return false;
  const NoticedRange& noticed = it->second;
  NoteRevokedLocked(importer, noticed.address, noticed.bytes, noticed.reason);
  DeferLocked(importer, noticed.range.keepalive);
  released = std::move(it->second.range);
  noticed_.erase(it);
  return true;
}

size_t MemoryManager::NoticedRangesOf(SessionId importer) const {
  absl::MutexLock lock(&mu_);
  size_t count = 0;
  for (const auto& [notice, noticed] : noticed_) count += noticed.importer == importer ? 1 : 0;
  return count;
}

void MemoryManager::NoteRevokedLocked(SessionId importer, uint64_t address, uint64_t bytes,
                                      const std::string& reason) {
  auto session = revocations_.find(importer);
  if (session == revocations_.end()) return;  // ended: nobody left to tell why
  std::map<uint64_t, Revocation>& notes = session->second;
  if (notes.size() >= kRevocationsKept && notes.count(address) == 0) notes.erase(notes.begin());
  notes[address] = Revocation{bytes, reason};
}

void MemoryManager::ForgetRevocationLocked(SessionId session, uint64_t address) {
  auto notes = revocations_.find(session);
  if (notes != revocations_.end()) notes->second.erase(address);
}

bool MemoryManager::IsOwnAllocation(SessionId session, const ResolvedRange& range) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = allocations_.find(range.span.buffer.address);
  return it != allocations_.end() && it->second.get() == range.keepalive.get() &&
         it->second->session == session;
}

absl::StatusOr<ResolvedRange> MemoryManager::Resolve(SessionId session, uint64_t address,
                                                     uint64_t bytes) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = allocations_.upper_bound(address);
  if (it != allocations_.begin()) {
    --it;
    const Block& block = *it->second;
    const uint64_t offset = address - block.buffer.address;
    if (block.session == session && offset < block.buffer.size &&
        bytes <= block.buffer.size - offset) {
      return ResolvedRange{hal::DeviceSpan{block.buffer, offset}, block.device_id, it->second,
                           block.buffer.size - offset};
    }
    for (const Block::SharedRange& grant : block.grants) {
      if (grant.importer == session && offset >= grant.offset &&
          offset - grant.offset < grant.bytes && bytes <= grant.bytes - (offset - grant.offset)) {
        return ResolvedRange{hal::DeviceSpan{block.buffer, offset}, block.device_id, it->second,
                             grant.bytes - (offset - grant.offset)};
      }
    }
  }
  auto mapped = mappings_.upper_bound(address);
  if (mapped != mappings_.begin()) {
    --mapped;
    const Mapping& mapping = mapped->second;
    const uint64_t offset = address - mapped->first;
    if (mapping.session == session && offset < mapping.bytes && bytes <= mapping.bytes - offset) {
      ResolvedRange resolved = mapping.physical;
      resolved.span.offset += offset;
      resolved.reachable = mapping.bytes - offset;
      return resolved;
    }
  }
  // Revoked, but its process has not seen the notice yet.
  for (const auto& [notice, noticed] : noticed_) {
    if (noticed.importer != session || address < noticed.address) continue;
    const uint64_t offset = address - noticed.address;
    if (offset < noticed.bytes && bytes <= noticed.bytes - offset) {
      ResolvedRange resolved = noticed.range;
      resolved.span.offset += offset;
      resolved.reachable = noticed.bytes - offset;
      return resolved;
    }
  }
  std::string why;
  auto notes = revocations_.find(session);
  if (notes != revocations_.end()) {
    auto note = notes->second.upper_bound(address);
    if (note != notes->second.begin()) {
      --note;
      if (address - note->first < note->second.bytes) {
        why = absl::StrCat(" (shared memory it imported there was revoked: ", note->second.reason,
                           ")");
      }
    }
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrFormat("device range [0x%x, +%u) is not inside a live allocation of "
                                   "this process%s",
                                   address, bytes, why));
}

std::vector<std::shared_ptr<void>> MemoryManager::ReleaseSession(SessionId session,
                                                                 std::optional<int32_t> device) {
  std::vector<std::shared_ptr<void>> released;  // the caller's, after its locks
  {
    absl::MutexLock lock(&mu_);
    // Only the session's own entries are visited: its end costs no more
    // however many other sessions hold.
    if (auto mine = mappings_of_.find(session); mine != mappings_of_.end()) {
      for (auto address = mine->second.begin(); address != mine->second.end();) {
        auto it = mappings_.find(*address);
        if (device && it->second.physical.device != *device) {
          ++address;
          continue;
        }
        DeferLocked(session, it->second.physical.keepalive);
        released.push_back(std::move(it->second.physical.keepalive));
        mappings_.erase(it);
        address = mine->second.erase(address);
      }
      if (mine->second.empty()) mappings_of_.erase(mine);
    }
    if (auto mine = allocations_of_.find(session); mine != allocations_of_.end()) {
      for (auto address = mine->second.begin(); address != mine->second.end();) {
        auto it = allocations_.find(*address);
        if (device && it->second->device_id != *device) {
          ++address;
          continue;
        }
        RevokeGrantsLocked(it->second,
                           "the exporting process released its memory (a reset or its end)");
        DeferLocked(session, it->second);
        released.push_back(std::move(it->second));
        allocations_.erase(it);
        address = mine->second.erase(address);
      }
      if (mine->second.empty()) allocations_of_.erase(mine);
    }
  }
  TellUntold();
  return released;
}

void MemoryManager::RemoveSession(SessionId session) {
  ReleaseSession(session);
  std::vector<NoticedRange> unseen;  // their keepalives go after the lock
  {
    absl::MutexLock lock(&mu_);
    revocations_.erase(session);
    noticing_.erase(session);
    for (auto it = noticed_.begin(); it != noticed_.end();) {
      if (it->second.importer == session) {
        DeferLocked(session, it->second.range.keepalive);
        unseen.push_back(std::move(it->second));
        it = noticed_.erase(it);
      } else {
        ++it;
      }
    }
    // Its launches still queued keep what it let go (their tickets hold it).
    fences_.erase(session);
  }
  absl::MutexLock lock(&ledger_->mu);
  ledger_->accounts.erase(session);
}

void MemoryManager::SetQuota(SessionId session, uint64_t bytes) {
  absl::MutexLock lock(&ledger_->mu);
  auto it = ledger_->accounts.find(session);
  if (it == ledger_->accounts.end()) return;
  it->second.quota = bytes;
  it->second.own_quota = true;
}

void MemoryManager::SetDefaultQuota(uint64_t bytes) {
  absl::MutexLock lock(&ledger_->mu);
  ledger_->default_quota = bytes;
}

void MemoryManager::SetMaxAllocations(uint64_t per_session, uint64_t per_tenant) {
  absl::MutexLock lock(&ledger_->mu);
  ledger_->max_allocations = per_session;
  ledger_->allocations_by_tenant.set_limit(per_tenant);
}

uint64_t MemoryManager::MaxAllocationsPerTenant() const {
  absl::MutexLock lock(&ledger_->mu);
  return ledger_->allocations_by_tenant.limit();
}

std::map<Tenant, uint64_t> MemoryManager::AllocationsByTenant() const {
  absl::MutexLock lock(&ledger_->mu);
  return ledger_->allocations_by_tenant.all();
}

void MemoryManager::Unindex(std::map<SessionId, std::set<uint64_t>>& index, SessionId session,
                            uint64_t address) {
  auto mine = index.find(session);
  if (mine == index.end()) return;
  mine->second.erase(address);
  if (mine->second.empty()) index.erase(mine);
}

MemoryManager::SessionUsage MemoryManager::UsageOf(SessionId session) const {
  absl::MutexLock lock(&ledger_->mu);
  auto it = ledger_->accounts.find(session);
  if (it == ledger_->accounts.end()) {
    return SessionUsage{0, 0, ledger_->default_quota, ledger_->max_allocations};
  }
  return SessionUsage{it->second.bytes, it->second.allocations, it->second.quota,
                      ledger_->max_allocations};
}

}  // namespace acld
