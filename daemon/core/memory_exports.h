// IPC memory sharing by key (aclrtIpcMemGetExportKey and its calls): the
// exports sessions made, who may import them, and who did.
//
// A key is a capability (daemon/core/capability_key.h). An export names one
// range of its owner's allocation; an importer reaches exactly that range
// (MemoryManager::Grant), charged to nobody but the owner.
//
// Whitelists are the kernel's word, not the client's (kernel_whitelist.h).
//
// Nothing outlives its owner: the owner's close, free, reset or end revokes
// every import (work already launched on it keeps its pin and completes;
// later use fails naming the reason), and an importer's close or end drops
// its import.
#ifndef ACLD_DAEMON_CORE_MEMORY_EXPORTS_H_
#define ACLD_DAEMON_CORE_MEMORY_EXPORTS_H_

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/kernel_whitelist.h"
#include "daemon/core/memory_manager.h"
#include "daemon/core/session_id.h"

namespace acld {

class MemoryExports {
 public:
  // CANN's key buffer: 64 characters and the terminating NUL.
  static constexpr size_t kKeyBytes = 65;
  static constexpr size_t kMaxExportsPerSession = 1024;
  static constexpr size_t kMaxImportsPerSession = 1024;

  // `now_ticks` tells the current time on the clock of KernelIdentity::start_ticks.
  MemoryExports(MemoryManager& memory, std::function<uint64_t()> now_ticks);

  // Exports [address, address + size) of the owner's memory. flags: 0 checks
  // the whitelist, 1 (DISABLE_PID_VALIDATION) lets any holder of the key in.
  absl::StatusOr<std::string> Export(SessionId owner, uint64_t address, uint64_t size,
                                     uint64_t flags);
  absl::Status SetImportPids(SessionId owner, const std::string& key,
                             const std::vector<int32_t>& pids);
  // Records a link attribute (aclrtIpcMemSetAttr); the sim has one link.
  absl::Status SetAttribute(SessionId owner, const std::string& key, int32_t type, uint64_t value);
  // The address the importer uses for the export's range.
  absl::StatusOr<uint64_t> Import(const KernelIdentity& importer, const std::string& key);
  // By the owner: the export ends and every import is revoked. By an
  // importer: its import ends.
  absl::Status Close(SessionId session, const std::string& key);
  // The session ended (exit, kill, eviction): its exports, imports and the
  // whitelist entries bound to it.
  void SessionEnded(SessionId session);

  struct ImportView {
    SessionId session = 0;
    uint64_t address = 0;
  };
  struct ExportView {
    std::string key_prefix;  // the first 8 characters, enough to tell them apart
    SessionId owner = 0;
    int32_t device = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    bool pid_validation = true;
    std::vector<int32_t> whitelist;
    std::vector<ImportView> imports;
  };
  std::vector<ExportView> Snapshot() const;

 private:
  struct Exported {
    SessionId owner = 0;
    int32_t device = 0;
    uint64_t address = 0;
    uint64_t size = 0;
    std::weak_ptr<void> allocation;
    bool pid_validation = true;
    KernelWhitelist whitelist;
    std::map<SessionId, uint64_t> imports;  // importer -> the address it uses
    std::map<int32_t, uint64_t> attributes;
  };

  // The owner's export under `key`; the same error for a key that does not
  // exist and one of another session, so keys cannot be probed.
  absl::StatusOr<Exported*> OwnedLocked(SessionId owner, const std::string& key, const char* api)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // What one session has to do with exports, so that its end looks at its
  // own keys only: walking every export on the host under the runtime's
  // lock at each session's end let one user's many exports stall everyone.
  struct SessionKeys {
    std::set<std::string> exported;
    std::set<std::string> imported;
    std::set<std::string> bound;  // whose whitelist has an entry bound to it
    // Keys whose import the owner revoked: the importer's close of one still
    // succeeds, as CANN's cleanup order expects (at most kMaxImportsPerSession).
    std::set<std::string> revoked;
    size_t whitelist_entries = 0;  // what its exports' whitelists hold
  };

  // The export under `key` ends: its imports are revoked, its whitelist's
  // entries no longer count for its owner.
  void EraseLocked(std::map<std::string, Exported>::iterator it, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  MemoryManager& memory_;
  const std::function<uint64_t()> now_ticks_;
  mutable absl::Mutex mu_;
  std::map<std::string, Exported> exports_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, SessionKeys> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_MEMORY_EXPORTS_H_
