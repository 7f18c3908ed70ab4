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
  size_t& count = exports_per_session_[owner];
  if (count >= kMaxExportsPerSession) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": this process has ", count,
                                  " exported keys, the most it may hold; close some"));
  }
  Exported& entry = exports_[key];
  entry.owner = owner;
  entry.device = range.device;
  entry.address = address;
  entry.size = size;
  entry.allocation = range.keepalive;
  entry.pid_validation = flags == 0;
  ++count;
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
  return entry->whitelist.Add(pids, now_ticks_(), kApi);
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
  if (imported != entry.imports.end()) return imported->second;
  size_t& count = imports_per_session_[importer.session];
  if (count >= kMaxImportsPerSession) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(kApi, ": this process holds ", count,
                                  " imports, the most it may; close some"));
  }
  ACL_RETURN_IF_ERROR(memory_.GrantRoom(entry.allocation, entry.address, importer.session));
  // After the caps: passing the whitelist binds its entry to this session,
  // which must then hold the import (its end unbinds the entry). Only a
  // race refuses it after that (a free, or the importer's end, which
  // unbinds the entry).
  if (entry.pid_validation && !entry.whitelist.Admits(importer)) {
    return AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                     absl::StrCat(kApi, ": process ", importer.pid,
                                  " is not on the key's whitelist (the exporter adds it with "
                                  "aclrtIpcMemSetImportPid and the pid of aclrtDeviceGetBareTgid)"));
  }
  ACL_RETURN_IF_ERROR(memory_.Grant(entry.allocation, entry.address, entry.size, importer.session));
  entry.imports[importer.session] = entry.address;
  ++count;
  return entry.address;
}

void MemoryExports::RevokeImportsLocked(const std::string& key, const Exported& entry,
                                        const std::string& reason) {
  for (const auto& [importer, address] : entry.imports) {
    memory_.Revoke(importer, entry.allocation, address, reason, /*by_exporter=*/true);
    --imports_per_session_[importer];
    std::set<std::string>& revoked = revoked_keys_[importer];
    if (revoked.size() < kMaxImportsPerSession) revoked.insert(key);
  }
}

absl::Status MemoryExports::Close(SessionId session, const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = exports_.find(key);
  if (it != exports_.end() && it->second.owner == session) {
    RevokeImportsLocked(key, it->second, "the exporting process closed its key");
    --exports_per_session_[session];
    exports_.erase(it);
    return absl::OkStatus();
  }
  if (it != exports_.end()) {
    auto imported = it->second.imports.find(session);
    if (imported != it->second.imports.end()) {
      memory_.Revoke(session, it->second.allocation, imported->second,
                     "this process closed the key", /*by_exporter=*/false);
      it->second.imports.erase(imported);
      --imports_per_session_[session];
      return absl::OkStatus();
    }
  }
  auto revoked = revoked_keys_.find(session);
  if (revoked != revoked_keys_.end() && revoked->second.erase(key) != 0) {
    return absl::OkStatus();  // its exporter took it away first
  }
  return Invalid("aclrtIpcMemClose", "the key is not one this process exported or imported");
}

void MemoryExports::SessionEnded(SessionId session) {
  absl::MutexLock lock(&mu_);
  for (auto it = exports_.begin(); it != exports_.end();) {
    Exported& entry = it->second;
    if (entry.owner == session) {
      RevokeImportsLocked(it->first, entry, "the exporting process ended");
      it = exports_.erase(it);
      continue;
    }
    auto imported = entry.imports.find(session);
    if (imported != entry.imports.end()) {
      memory_.Revoke(session, entry.allocation, imported->second, "this process ended",
                     /*by_exporter=*/false);
      entry.imports.erase(imported);
    }
    entry.whitelist.SessionEnded(session);
    ++it;
  }
  exports_per_session_.erase(session);
  imports_per_session_.erase(session);
  revoked_keys_.erase(session);
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
