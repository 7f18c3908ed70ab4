#include "daemon/core/physical_memory.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "acl/acl_base.h"
#include "daemon/core/capability_key.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

absl::Status Invalid(const char* api, absl::string_view what) {
  return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": ", what));
}

absl::Status OverLimit(const char* api, const char* what) {
  return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                   absl::StrCat(api, ": this process holds ", PhysicalMemory::kMaxPerSession, " ",
                                what, ", the most it may; release some"));
}

}  // namespace

PhysicalMemory::PhysicalMemory(MemoryManager& memory, hal::Backend& backend,
                               std::function<uint64_t()> now_ticks)
    : memory_(memory), backend_(backend), now_ticks_(std::move(now_ticks)) {}

uint64_t PhysicalMemory::GranularityOf(int32_t device) const {
  return backend_.device(device).features().address_granularity;
}

absl::StatusOr<uint64_t> PhysicalMemory::RoundedSize(int32_t device, uint64_t size,
                                                     const char* api) const {
  const uint64_t granularity = GranularityOf(device);
  if (granularity == 0) {
    return AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                     absl::StrCat(api, ": the device does not manage virtual addresses"));
  }
  // Checked before rounding, so that a size near 2^64 cannot round to 0.
  if (size == 0 || size > UINT64_MAX - (granularity - 1)) {
    return Invalid(api, absl::StrCat("size ", size, " is 0 or too large"));
  }
  return (size + granularity - 1) / granularity * granularity;
}

absl::StatusOr<uint64_t> PhysicalMemory::Allocate(SessionId session, int32_t device,
                                                  uint64_t size, bool huge_pages) {
  constexpr const char* kApi = "aclrtMallocPhysical";
  ACL_ASSIGN_OR_RETURN(const uint64_t rounded, RoundedSize(device, size, kApi));
  {  // a full session's call costs no allocation
    absl::MutexLock lock(&mu_);
    auto holdings = holdings_.find(session);  // none made for a session that ended meanwhile
    if (holdings != holdings_.end() && holdings->second.handles.size() >= kMaxPerSession) {
      return OverLimit(kApi, "physical memory handles");
    }
  }
  // Allocated outside the lock: the device may take its time.
  ACL_ASSIGN_OR_RETURN(ResolvedRange memory, memory_.AllocateHeld(session, device, rounded, "aclrtMallocPhysical"));
  auto handle = std::make_shared<Handle>();
  handle->owner = session;
  handle->device = device;
  handle->size = rounded;
  handle->huge_pages = huge_pages;
  handle->memory = std::move(memory);
  DroppingLock lock(this);  // released before `handle`, and with it the memory, goes
  // Again: calls of one session racing for its last slot must not pass the bound.
  auto& handles = holdings_[session].handles;
  if (handles.size() >= kMaxPerSession) return OverLimit(kApi, "physical memory handles");
  const uint64_t id = next_handle_++;
  handles[id] = std::move(handle);
  return id;
}

absl::StatusOr<std::shared_ptr<PhysicalMemory::Handle>> PhysicalMemory::HandleLocked(
    SessionId session, uint64_t handle, const char* api) {
  auto holdings = holdings_.find(session);
  if (holdings != holdings_.end()) {
    auto it = holdings->second.handles.find(handle);
    if (it != holdings->second.handles.end()) return it->second;
  }
  return Invalid(api, "handle is not a physical memory handle of this process (freed already, "
                      "or never made here)");
}

absl::Status PhysicalMemory::Free(SessionId session, uint64_t id) {
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Handle> handle,
                       HandleLocked(session, id, "aclrtFreePhysical"));
  if (--handle->references > 0) return absl::OkStatus();
  holdings_[session].handles.erase(id);
  DropHandleLocked(session, handle, "the exporting process freed it");
  DropLocked(std::move(handle));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PhysicalMemory::Retain(SessionId session, uint64_t address) {
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(MappingAt at,
                       MappingAtLocked(session, address, "aclrtMemRetainAllocationHandle"));
  const std::shared_ptr<Handle>& handle = at.mapping->handle;
  Holdings& holdings = holdings_[session];
  for (const auto& [id, held] : holdings.handles) {
    if (held == handle) {
      ++handle->references;
      return id;
    }
  }
  // Freed while mapped: the handle comes back, with one reference.
  if (holdings.handles.size() >= kMaxPerSession) {
    return OverLimit("aclrtMemRetainAllocationHandle", "physical memory handles");
  }
  const uint64_t id = next_handle_++;
  handle->references = 1;
  holdings.handles[id] = handle;
  return id;
}

absl::StatusOr<PhysicalMemory::Properties> PhysicalMemory::PropertiesOf(SessionId session,
                                                                       uint64_t id) {
  absl::MutexLock lock(&mu_);  // drops nothing
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Handle> handle,
                       HandleLocked(session, id, "aclrtMemGetAllocationPropertiesFromHandle"));
  return Properties{handle->device, handle->huge_pages};
}

absl::StatusOr<bool> PhysicalMemory::Readable(SessionId session, uint64_t address,
                                              int32_t device) {
  absl::MutexLock lock(&mu_);  // drops nothing
  ACL_ASSIGN_OR_RETURN(MappingAt at, MappingAtLocked(session, address, "aclrtMemGetAccess"));
  return device == at.reservation->device && at.mapping->accessible &&
         at.mapping->handle->revoked.empty();
}

void PhysicalMemory::DropHandleLocked(SessionId session, const std::shared_ptr<Handle>& handle,
                                      const std::string& reason) {
  if (handle->shareable == 0) return;  // never exported, nor imported
  auto it = exports_.find(handle->shareable);
  if (it == exports_.end()) return;  // its export ended already
  Exported& entry = it->second;
  if (entry.handle != handle) {
    // An importer's handle leaves the export it came from once nothing of
    // it is left: one freed while still mapped stays listed, so that the
    // owner's free, reset or end still revokes those mappings (UnmapLocked
    // drops it with its last one).
    if (handle->mappings == 0) {
      auto import = entry.imports.find(handle.get());
      if (import != entry.imports.end()) {
        DropLocked(std::move(import->second.handle));
        entry.imports.erase(import);
      }
    }
    return;
  }
  // The owner's: every import is revoked, and the mappings of it stop
  // resolving, naming the reason. Importers keep their handles, so that
  // their unmap, release and free still succeed.
  for (auto& [raw, import] : entry.imports) {
    const std::shared_ptr<Handle>& imported = import.handle;
    imported->revoked = reason;
    DropLocked(std::move(imported->memory.keepalive));
    imported->memory = ResolvedRange{};
    if (imported->mappings == 0) continue;
    for (auto& [start, reservation] : holdings_[import.session].reservations) {
      for (const auto& [address, mapping] : reservation.mappings) {
        if (mapping.handle == imported) memory_.RevokeMapping(import.session, address, reason);
      }
    }
  }
  for (SessionId bound : entry.whitelist.BoundSessions()) {
    auto holdings = holdings_.find(bound);
    if (holdings != holdings_.end()) holdings->second.bound.erase(it->first);
  }
  Holdings& owner = holdings_[session];
  --owner.exports;
  KernelWhitelist::Uncount(owner.whitelist_entries, entry.whitelist.size());
  handle->shareable = 0;  // retained while mapped, it may be exported again
  DropLocked(std::move(entry.handle));
  for (auto& [raw, import] : entry.imports) DropLocked(std::move(import.handle));
  exports_.erase(it);
}

absl::StatusOr<uint64_t> PhysicalMemory::Reserve(SessionId session, int32_t device,
                                                 uint64_t size) {
  constexpr const char* kApi = "aclrtReserveMemAddress";
  ACL_ASSIGN_OR_RETURN(const uint64_t rounded, RoundedSize(device, size, kApi));
  const uint64_t granularity = GranularityOf(device);
  hal::Device& hal_device = backend_.device(device);
  const uint64_t bound = hal_device.info().memory_bytes * kReservedPerMemory;
  DroppingLock lock(this);
  Holdings& holdings = holdings_[session];
  if (holdings.reservations.size() >= kMaxPerSession) return OverLimit(kApi, "reservations");
  uint64_t& reserved = holdings.reserved_bytes[device];
  if (rounded > bound - std::min(bound, reserved)) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": ", rounded, " more bytes of addresses would pass this "
                                  "process's bound on the device, ", bound,
                                  " bytes (", kReservedPerMemory, " times its memory; ", reserved,
                                  " reserved); release some"));
  }
  ACL_ASSIGN_OR_RETURN(uint64_t address, hal_device.ReserveAddresses(rounded, granularity));
  reserved += rounded;
  holdings.reservations[address] = Reservation{device, rounded, {}};
  return address;
}

absl::StatusOr<std::pair<const uint64_t, PhysicalMemory::Reservation>*>
PhysicalMemory::ReservationLocked(SessionId session, uint64_t address, uint64_t size,
                                  const char* api) {
  auto holdings = holdings_.find(session);
  if (holdings != holdings_.end()) {
    auto it = holdings->second.reservations.upper_bound(address);
    if (it != holdings->second.reservations.begin()) {
      --it;
      const uint64_t offset = address - it->first;
      if (offset < it->second.size && size <= it->second.size - offset) return &*it;
    }
  }
  return Invalid(api, absl::StrFormat("[0x%x, +%u) is not inside one address reservation of this "
                                      "process (aclrtReserveMemAddress)",
                                      address, size));
}

absl::StatusOr<PhysicalMemory::MappingAt> PhysicalMemory::MappingAtLocked(SessionId session,
                                                                          uint64_t address,
                                                                          const char* api) {
  ACL_ASSIGN_OR_RETURN(auto* reservation, ReservationLocked(session, address, 1, api));
  auto mapping = reservation->second.mappings.find(address);
  if (mapping == reservation->second.mappings.end()) {
    return Invalid(api, absl::StrFormat("0x%x is not the start of a mapping", address));
  }
  return MappingAt{&reservation->second, &mapping->second};
}

absl::Status PhysicalMemory::Release(SessionId session, uint64_t address) {
  constexpr const char* kApi = "aclrtReleaseMemAddress";
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(auto* reservation, ReservationLocked(session, address, 1, kApi));
  if (reservation->first != address) {
    return Invalid(kApi, absl::StrFormat("0x%x is not the start of a reservation", address));
  }
  if (!reservation->second.mappings.empty()) {
    return Invalid(kApi, absl::StrCat("the reservation still holds ",
                                      reservation->second.mappings.size(),
                                      " mapping(s); aclrtUnmapMem first"));
  }
  ReleaseLocked(session, address, reservation->second);
  holdings_[session].reservations.erase(address);
  return absl::OkStatus();
}

void PhysicalMemory::ReleaseLocked(SessionId session, uint64_t address,
                                   const Reservation& reservation) {
  holdings_[session].reserved_bytes[reservation.device] -= reservation.size;
  backend_.device(reservation.device).ReleaseAddresses(address, reservation.size);
}

void PhysicalMemory::ApplyLocked(SessionId session, uint64_t address, const Mapping& mapping) {
  const Handle& handle = *mapping.handle;
  if (!handle.revoked.empty()) {
    memory_.Unmap(session, address, handle.revoked);
  } else if (!mapping.accessible) {
    memory_.Unmap(session, address);
  } else {
    memory_.Map(session, address, mapping.size, handle.memory);
  }
}

absl::Status PhysicalMemory::Map(SessionId session, uint64_t address, uint64_t size,
                                 uint64_t offset, uint64_t id, bool accessible) {
  const char* api = accessible ? "aclrtMapMem" : "aclrtMemMapNoAccess";
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(auto* reservation, ReservationLocked(session, address, size, api));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Handle> handle, HandleLocked(session, id, api));
  if (!handle->revoked.empty()) {
    return Invalid(api, absl::StrCat("the handle's memory was revoked: ", handle->revoked));
  }
  Reservation& reserved = reservation->second;
  if (handle->device != reserved.device) {
    return Invalid(api, "the handle's memory and the reservation are on different devices");
  }
  if (offset != 0 || size != handle->size) {
    return Invalid(api, absl::StrCat("a mapping is the whole physical memory: offset 0 and size ",
                                     handle->size, " (asked offset ", offset, ", size ", size,
                                     ")"));
  }
  const uint64_t granularity = GranularityOf(reserved.device);
  if ((address - reservation->first) % granularity != 0) {
    return Invalid(api, absl::StrFormat("0x%x is not a multiple of the granularity, %u bytes, "
                                        "into its reservation",
                                        address, granularity));
  }
  auto next = reserved.mappings.lower_bound(address);
  const bool overlaps_next = next != reserved.mappings.end() && next->first - address < size;
  const bool overlaps_previous =
      next != reserved.mappings.begin() &&
      address - std::prev(next)->first < std::prev(next)->second.size;
  if (overlaps_next || overlaps_previous) {
    return Invalid(api, absl::StrFormat("[0x%x, +%u) overlaps a mapping already there", address,
                                        size));
  }
  Holdings& holdings = holdings_[session];
  if (holdings.mappings >= kMaxPerSession) return OverLimit(api, "mappings");
  const Mapping& mapping = reserved.mappings[address] = Mapping{size, handle, accessible};
  ++handle->mappings;
  ++holdings.mappings;
  ApplyLocked(session, address, mapping);
  return absl::OkStatus();
}

void PhysicalMemory::UnmapLocked(SessionId session, Reservation& reservation, uint64_t address) {
  auto mapping = reservation.mappings.find(address);
  memory_.Unmap(session, address);
  std::shared_ptr<Handle> handle = std::move(mapping->second.handle);
  --handle->mappings;
  --holdings_[session].mappings;
  reservation.mappings.erase(mapping);
  // The last mapping of a handle freed before it: the handle is gone now.
  if (handle->mappings == 0 && handle->references == 0) {
    DropHandleLocked(session, handle, "the exporting process freed it");
  }
  DropLocked(std::move(handle));
}

absl::Status PhysicalMemory::Unmap(SessionId session, uint64_t address) {
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(MappingAt at, MappingAtLocked(session, address, "aclrtUnmapMem"));
  UnmapLocked(session, *at.reservation, address);
  return absl::OkStatus();
}

absl::Status PhysicalMemory::SetAccess(SessionId session, uint64_t address, uint64_t size,
                                       int32_t device, bool readwrite) {
  constexpr const char* kApi = "aclrtMemSetAccess";
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(auto* reservation, ReservationLocked(session, address, size, kApi));
  auto mapping = reservation->second.mappings.find(address);
  if (mapping == reservation->second.mappings.end() || mapping->second.size != size) {
    return Invalid(kApi, absl::StrFormat("[0x%x, +%u) is not one mapping: virPtr and size are "
                                         "those of one aclrtMapMem",
                                         address, size));
  }
  if (device != reservation->second.device) {
    return Invalid(kApi, absl::StrCat("location.id ", device, " is not the mapping's device, ",
                                      reservation->second.device));
  }
  mapping->second.accessible = readwrite;
  ApplyLocked(session, address, mapping->second);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PhysicalMemory::Export(SessionId session, uint64_t id,
                                                bool pid_validation) {
  constexpr const char* kApi = "aclrtMemExportToShareableHandle";
  ACL_ASSIGN_OR_RETURN(uint64_t shareable, NewCapabilityNumber());
  DroppingLock lock(this);
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Handle> handle, HandleLocked(session, id, kApi));
  if (handle->owner != session) {
    return Invalid(kApi, "the handle was imported; only the process that allocated the memory "
                         "exports it");
  }
  if (handle->shareable != 0) return Invalid(kApi, "the handle is exported already");
  Holdings& holdings = holdings_[session];
  if (holdings.exports >= kMaxPerSession) return OverLimit(kApi, "shareable handles");
  if (exports_.count(shareable) != 0) {
    return AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, absl::StrCat(kApi, ": try again"));
  }
  Exported& entry = exports_[shareable];
  handle->shareable = shareable;
  entry.handle = std::move(handle);
  entry.pid_validation = pid_validation;
  ++holdings.exports;
  return shareable;
}

absl::Status PhysicalMemory::SetImportPids(SessionId owner, uint64_t shareable,
                                           const std::vector<int32_t>& pids) {
  constexpr const char* kApi = "aclrtMemSetPidToShareableHandle";
  DroppingLock lock(this);
  auto it = exports_.find(shareable);
  // The same answer for a handle of another process as for none, so that
  // shareable handles cannot be probed.
  if (it == exports_.end() || it->second.handle->owner != owner) {
    return Invalid(kApi, "shareableHandle is not one this process exported (or its memory was "
                         "freed)");
  }
  return it->second.whitelist.Add(pids, now_ticks_(), kApi, holdings_[owner].whitelist_entries);
}

absl::StatusOr<uint64_t> PhysicalMemory::Import(const KernelIdentity& importer, uint64_t shareable,
                                                int32_t device) {
  constexpr const char* kApi = "aclrtMemImportFromShareableHandle";
  DroppingLock lock(this);
  auto it = exports_.find(shareable);
  if (it == exports_.end()) {
    return Invalid(kApi, "no export has this shareable handle (never made, or its memory was "
                         "freed, or its process ended)");
  }
  Exported& entry = it->second;
  const Handle& exported = *entry.handle;
  if (exported.owner == importer.session) {
    return Invalid(kApi, "a process cannot import its own export; it maps its handle directly");
  }
  if (device != exported.device) {
    return Invalid(kApi, "the memory is on another device; acld imports it on its own device "
                         "only");
  }
  Holdings& holdings = holdings_[importer.session];
  if (holdings.handles.size() >= kMaxPerSession) return OverLimit(kApi, "physical memory handles");
  if (entry.imports.size() >= kMaxImportsPerExport) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": the memory is imported ", entry.imports.size(),
                                  " times already, the most one export may be"));
  }
  const size_t by_importer = static_cast<size_t>(
      std::count_if(entry.imports.begin(), entry.imports.end(),
                    [&](const auto& held) { return held.second.session == importer.session; }));
  if (by_importer >= kMaxImportsPerImporter) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": this process imported the memory ", by_importer,
                                  " times already, the most one process may at once"));
  }
  // Last: passing the whitelist binds its entry to this session, which must
  // then hold the import (its end unbinds the entry).
  if (entry.pid_validation) {
    if (!entry.whitelist.Admits(importer)) {
      return AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                       absl::StrCat(kApi, ": process ", importer.pid,
                                    " is not on the handle's whitelist (the exporter adds it "
                                    "with aclrtMemSetPidToShareableHandle and the pid of "
                                    "aclrtDeviceGetBareTgid)"));
    }
    holdings.bound.insert(shareable);
  }
  auto handle = std::make_shared<Handle>();
  handle->owner = exported.owner;
  handle->device = exported.device;
  handle->size = exported.size;
  handle->huge_pages = exported.huge_pages;
  handle->memory = exported.memory;
  handle->shareable = shareable;
  const uint64_t id = next_handle_++;
  holdings.handles[id] = handle;
  const Handle* key = handle.get();
  entry.imports[key] = ImportHeld{importer.session, std::move(handle)};
  return id;
}

PhysicalMemory::Dropped PhysicalMemory::Released(SessionId session,
                                                 std::optional<int32_t> device) {
  Dropped dropped;
  DroppingLock lock(this, &dropped);
  auto holdings = holdings_.find(session);
  if (holdings == holdings_.end()) return dropped;
  auto on_device = [&](int32_t d) { return !device.has_value() || *device == d; };
  auto& reservations = holdings->second.reservations;
  for (auto it = reservations.begin(); it != reservations.end();) {
    Reservation& reservation = it->second;
    if (!on_device(reservation.device)) {
      ++it;
      continue;
    }
    while (!reservation.mappings.empty()) {
      UnmapLocked(session, reservation, reservation.mappings.begin()->first);
    }
    ReleaseLocked(session, it->first, reservation);
    it = reservations.erase(it);
  }
  auto& handles = holdings->second.handles;
  for (auto it = handles.begin(); it != handles.end();) {
    if (!on_device(it->second->device)) {
      ++it;
      continue;
    }
    std::shared_ptr<Handle> handle = std::move(it->second);
    it = handles.erase(it);
    DropHandleLocked(session, handle,
                     device.has_value() ? "the exporting process reset its device"
                                        : "the exporting process ended");
    DropLocked(std::move(handle));
  }
  return dropped;
}

PhysicalMemory::Dropped PhysicalMemory::SessionEnded(SessionId session) {
  Dropped dropped = Released(session, std::nullopt);
  DroppingLock lock(this, &dropped);
  auto holdings = holdings_.find(session);
  if (holdings == holdings_.end()) return dropped;
  for (uint64_t shareable : holdings->second.bound) {
    auto it = exports_.find(shareable);
    if (it == exports_.end()) continue;
    const size_t unbound = it->second.whitelist.SessionEnded(session);
    auto owner = holdings_.find(it->second.handle->owner);
    if (owner != holdings_.end()) KernelWhitelist::Uncount(owner->second.whitelist_entries, unbound);
  }
  holdings_.erase(holdings);
  return dropped;
}

PhysicalMemory::DroppingLock::DroppingLock(const PhysicalMemory* memory, Dropped* out)
    : memory_(memory), out_(out) {
  memory_->mu_.Lock();
}

PhysicalMemory::DroppingLock::~DroppingLock() {
  Dropped dropped = std::move(memory_->dropped_);
  memory_->dropped_.clear();
  memory_->mu_.Unlock();
  if (out_ != nullptr) {
    out_->insert(out_->end(), std::make_move_iterator(dropped.begin()),
                 std::make_move_iterator(dropped.end()));
  }
  // Else `dropped` goes here, with no lock of this class held.
}

PhysicalMemory::Usage PhysicalMemory::UsageOf(SessionId session) const {
  absl::MutexLock lock(&mu_);  // drops nothing
  auto holdings = holdings_.find(session);
  if (holdings == holdings_.end()) return {};
  const Holdings& held = holdings->second;
  Usage usage{static_cast<uint32_t>(held.handles.size()),
              static_cast<uint32_t>(held.reservations.size()),
              static_cast<uint32_t>(held.mappings), 0};
  for (const auto& [device, bytes] : held.reserved_bytes) usage.reserved_bytes += bytes;
  return usage;
}

std::vector<PhysicalMemory::ExportView> PhysicalMemory::Snapshot() const {
  absl::MutexLock lock(&mu_);  // drops nothing
  std::vector<ExportView> views;
  for (const auto& [shareable, entry] : exports_) {
    ExportView view;
    view.key_prefix = absl::StrFormat("%04x", shareable >> 48);
    view.owner = entry.handle->owner;
    view.device = entry.handle->device;
    view.size = entry.handle->size;
    view.pid_validation = entry.pid_validation;
    view.whitelist = entry.whitelist.Pids();
    for (const auto& [raw, import] : entry.imports) {
      view.imports.push_back(ImportView{import.session, import.handle->mappings != 0});
    }
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace acld
