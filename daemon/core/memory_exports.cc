#include "daemon/core/memory_exports.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/capability_key.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

absl::Status Invalid(const char* api, absl::string_view what) {
  return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": ", what));
}

}  // namespace

MemoryExports::MemoryExports(MemoryManager& memory, std::function<uint64_t()> now_ticks)
    : memory_(memory), now_ticks_(std::move(now_ticks)) {}

absl::StatusOr<std::string> MemoryExports::Export(SessionId owner, uint64_t address, uint64_t size,
                                                  uint64_t flags) {
  constexpr const char* kApi = "aclrtIpcMemGetExportKey";
  if (flags > 1) {
    return Invalid(kApi, absl::StrCat("flags ", flags,
                                      " is neither ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT nor "
                                      "ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION"));
  }
  if (size == 0) return Invalid(kApi, "size must be > 0");
  ACL_ASSIGN_OR_RETURN(ResolvedRange range, memory_.Resolve(owner, address, size));
  // A key grants the range at its own address; a mapping of physical memory
  // lives elsewhere (daemon/core/physical_memory.h) and is shared by handle.
  if (range.span.address() != address) {
    return Invalid(kApi, "the memory is a mapping of physical memory; share it with "
                         "aclrtMemExportToShareableHandle");
  }
  // Its owner's whitelist and close would not hold for a key made of it.
  if (!memory_.IsOwnAllocation(owner, range)) {
    return Invalid(kApi, "the memory was imported from another process (aclrtIpcMemImportByKey); "
                         "only the process that allocated it shares it");
  }
  ACL_ASSIGN_OR_RETURN(std::string key, NewCapabilityKey());
  absl::MutexLock lock(&mu_);
  SessionKeys& keys = sessions_[owner];
  if (keys.exported.size() >= kMaxExportsPerSession) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": this process has ", keys.exported.size(),
                                  " exported keys, the most it may hold; close some"));
  }
  Exported& entry = exports_[key];
  entry.owner = owner;
  entry.device = range.device;
  entry.address = address;
  entry.size = size;
  entry.allocation = range.keepalive;
  entry.pid_validation = flags == 0;
  keys.exported.insert(key);
  return key;
}

absl::StatusOr<MemoryExports::Exported*> MemoryExports::OwnedLocked(SessionId owner,
                                                                  const std::string& key,
                                                                  const char* api) {
  auto it = exports_.find(key);
  if (it == exports_.end() || it->second.owner != owner) {
    return Invalid(api, "the key is not one this process exported (or it was closed)");
  }
  return &it->second;
}

absl::Status MemoryExports::SetImportPids(SessionId owner, const std::string& key,
                                          const std::vector<int32_t>& pids) {
  constexpr const char* kApi = "aclrtIpcMemSetImportPid";
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Exported* entry, OwnedLocked(owner, key, kApi));
  return entry->whitelist.Add(pids, now_ticks_(), kApi, sessions_[owner].whitelist_entries);
}

absl::Status MemoryExports::SetAttribute(SessionId owner, const std::string& key, int32_t type,
                                         uint64_t value) {
  constexpr const char* kApi = "aclrtIpcMemSetAttr";
  if (type != 0) return Invalid(kApi, absl::StrCat("type ", type, " is not an aclrtIpcMemAttrType"));
  if (value > 3) return Invalid(kApi, absl::StrCat("link ", value, " is not an ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_* value"));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Exported* entry, OwnedLocked(owner, key, kApi));
  entry->attributes[type] = value;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryExports::Import(const KernelIdentity& importer,
                                               const std::string& key) {
  constexpr const char* kApi = "aclrtIpcMemImportByKey";
  absl::MutexLock lock(&mu_);
  auto it = exports_.find(key);
  if (it == exports_.end()) {
    return Invalid(kApi, "no export has this key (never made, closed, or its process ended)");
  }
  Exported& entry = it->second;
  if (entry.owner == importer.session) {
    return Invalid(kApi, "a process cannot import its own export; it uses the memory directly");
  }
  auto imported = entry.imports.find(importer.session);
  if (imported != entry.imports.end()) {
    // Its owner may have freed or reset the memory since: the address given
    // before now reaches nothing, and saying it again would say otherwise.
    if (!memory_.IsAllocated(entry.allocation, entry.address)) {
      return Invalid(kApi, "the shared memory was freed by the process that exported it");
    }
    return imported->second;
  }
  SessionKeys& keys = sessions_[importer.session];
  if (keys.imported.size() >= kMaxImportsPerSession) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": this process holds ", keys.imported.size(),
                                  " imports, the most it may; close some"));
  }
  ACL_RETURN_IF_ERROR(memory_.GrantRoom(entry.allocation, entry.address, importer.session));
  // After the caps: passing the whitelist binds its entry to this session,
  // which must then hold the import (its end unbinds the entry). Only a
  // race refuses it after that (a free, or the importer's end, which
  // unbinds the entry).
  if (entry.pid_validation) {
    if (!entry.whitelist.Admits(importer)) {
      return AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                       absl::StrCat(kApi, ": process ", importer.pid,
                                    " is not on the key's whitelist (the exporter adds it with "
                                    "aclrtIpcMemSetImportPid and the pid of "
                                    "aclrtDeviceGetBareTgid)"));
    }
    keys.bound.insert(key);
  }
  ACL_RETURN_IF_ERROR(memory_.Grant(entry.allocation, entry.address, entry.size, importer.session));
  entry.imports[importer.session] = entry.address;
  keys.imported.insert(key);
  return entry.address;
}

void MemoryExports::EraseLocked(std::map<std::string, Exported>::iterator it,
                                const std::string& reason) {
  const std::string& key = it->first;
  Exported& entry = it->second;
  std::vector<SessionId> importers;
  for (const auto& [importer, address] : entry.imports) {
    importers.push_back(importer);
    auto keys = sessions_.find(importer);
    if (keys == sessions_.end()) continue;
    keys->second.imported.erase(key);
    if (keys->second.revoked.size() < kMaxImportsPerSession) keys->second.revoked.insert(key);
  }
  // One pass over the allocation's grants for all of them.
  memory_.Revoke(importers, entry.allocation, entry.address, entry.size, reason,
                 /*by_exporter=*/true);
  for (SessionId bound : entry.whitelist.BoundSessions()) {
    auto keys = sessions_.find(bound);
    if (keys != sessions_.end()) keys->second.bound.erase(key);
  }
  auto owner = sessions_.find(entry.owner);
  if (owner != sessions_.end()) {
    owner->second.exported.erase(key);
    KernelWhitelist::Uncount(owner->second.whitelist_entries, entry.whitelist.size());
  }
  exports_.erase(it);
}

absl::Status MemoryExports::Close(SessionId session, const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = exports_.find(key);
  if (it != exports_.end() && it->second.owner == session) {
    EraseLocked(it, "the exporting process closed its key");
    return absl::OkStatus();
  }
  auto keys = sessions_.find(session);
  if (it != exports_.end()) {
    auto imported = it->second.imports.find(session);
    if (imported != it->second.imports.end()) {
      memory_.Revoke({session}, it->second.allocation, imported->second, it->second.size,
                     "this process closed the key", /*by_exporter=*/false);
      it->second.imports.erase(imported);
      if (keys != sessions_.end()) keys->second.imported.erase(key);
      return absl::OkStatus();
    }
  }
  if (keys != sessions_.end() && keys->second.revoked.erase(key) != 0) {
    return absl::OkStatus();  // its exporter took it away first
  }
  return Invalid("aclrtIpcMemClose", "the key is not one this process exported or imported");
}

void MemoryExports::SessionEnded(SessionId session) {
  absl::MutexLock lock(&mu_);
  auto found = sessions_.find(session);
  if (found == sessions_.end()) return;
  // Copies: erasing an export edits these sets.
  const std::set<std::string> exported = found->second.exported;
  const std::set<std::string> imported = found->second.imported;
  const std::set<std::string> bound = found->second.bound;
  for (const std::string& key : exported) {
    auto it = exports_.find(key);
    if (it != exports_.end()) EraseLocked(it, "the exporting process ended");
  }
  for (const std::string& key : imported) {
    auto it = exports_.find(key);
    if (it == exports_.end()) continue;
    auto import = it->second.imports.find(session);
    if (import == it->second.imports.end()) continue;
    memory_.Revoke({session}, it->second.allocation, import->second, it->second.size,
                   "this process ended", /*by_exporter=*/false);
    it->second.imports.erase(import);
  }
  for (const std::string& key : bound) {
    auto it = exports_.find(key);
    if (it == exports_.end()) continue;
    const size_t unbound = it->second.whitelist.SessionEnded(session);
    auto owner = sessions_.find(it->second.owner);
    if (owner != sessions_.end()) KernelWhitelist::Uncount(owner->second.whitelist_entries, unbound);
  }
  sessions_.erase(session);
}

std::vector<MemoryExports::ExportView> MemoryExports::Snapshot() const {
  absl::MutexLock lock(&mu_);
  std::vector<ExportView> views;
  for (const auto& [key, entry] : exports_) {
    ExportView view;
    view.key_prefix = key.substr(0, 8);
    view.owner = entry.owner;
    view.device = entry.device;
    view.address = entry.address;
    view.size = entry.size;
    view.pid_validation = entry.pid_validation;
    view.whitelist = entry.whitelist.Pids();
    for (const auto& [importer, address] : entry.imports) {
      view.imports.push_back(ImportView{importer, address});
    }
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace acld
