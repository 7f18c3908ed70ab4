// What loaded kernel binaries cost acld, charged to their session and its
// tenant for as long as acld holds them (docs/security.md,
// --max_binary_bytes_per_session / --max_binary_bytes_per_uid).
//
// A binary is held by its handle, its function handles and every launch of
// it still queued. Its charge goes with the last of them, not at
// aclrtBinaryUnLoad: a process that loaded, launched behind a stream that
// never drains and unloaded, over and over, made acld (and on a real device
// the vendor) hold every one of those binaries while none was charged.
#ifndef ACLD_DAEMON_CORE_BINARY_CHARGES_H_
#define ACLD_DAEMON_CORE_BINARY_CHARGES_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/session_id.h"
#include "daemon/core/tenant.h"
#include "hal/executable.h"

namespace acld {

class BinaryCharges {
 public:
  // 0: no limit.
  BinaryCharges(uint64_t max_per_session, uint64_t max_per_tenant);

  // One binary's charge (its bytes, its tables, its function handles),
  // given back when destroyed. Its own lock: it may be destroyed on any
  // thread, whatever that thread holds, once the last launch of it ran.
  class Held {
   public:
    ~Held();
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    // Charges `bytes` more (a function handle) if they fit both limits.
    absl::Status Add(uint64_t bytes);

   private:
    friend class BinaryCharges;
    struct Ledger;
    Held(std::shared_ptr<Ledger> ledger, SessionId session, Tenant tenant, uint64_t bytes);
    const std::shared_ptr<Ledger> ledger_;
    const SessionId session_;
    const Tenant tenant_;
    uint64_t bytes_;  // guarded by the ledger's lock
  };

  // Charges `bytes` to `session` and `tenant` if they fit.
  absl::StatusOr<std::unique_ptr<Held>> Charge(SessionId session, const Tenant& tenant,
                                               uint64_t bytes);

  // `executable` holding its charge: the returned pointer (and every copy of
  // it) keeps both, and the charge goes with the last copy. `held` is left
  // pointing at the charge, valid while a copy lives.
  static std::shared_ptr<hal::Executable> Holding(std::shared_ptr<hal::Executable> executable,
                                                  std::unique_ptr<Held> charge, Held** held);

  uint64_t OfSession(SessionId session) const;
  std::map<Tenant, uint64_t> ByTenant() const;
  uint64_t max_per_session() const;
  uint64_t max_per_tenant() const;

 private:
  const std::shared_ptr<Held::Ledger> ledger_;  // outlives the runtime while launches hold it
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_BINARY_CHARGES_H_
