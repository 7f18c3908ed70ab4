#include "daemon/core/binary_charges.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

struct BinaryCharges::Held::Ledger {
  Ledger(uint64_t max_per_session, uint64_t max_per_tenant)
      : max_per_session(max_per_session), by_tenant(max_per_tenant) {}

  absl::Status CheckRoomLocked(SessionId session, const Tenant& tenant, uint64_t bytes) const
      ABSL_SHARED_LOCKS_REQUIRED(mu) {
    auto of_session = by_session.find(session);
    const uint64_t held = of_session == by_session.end() ? 0 : of_session->second;
    if (max_per_session != 0 && bytes > max_per_session - std::min(max_per_session, held)) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat("kernel binaries: ", bytes, " more bytes would pass this "
                                    "process's limit of ", max_per_session, " (", held,
                                    " held, binaries and function handles, unloaded ones "
                                    "while launches of them are queued; "
                                    "--max_binary_bytes_per_session)"));
    }
    if (!by_tenant.Fits(tenant, bytes)) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat("kernel binaries: ", bytes,
                                    " more bytes would pass the limit of ", by_tenant.limit(),
                                    " for all processes of ", tenant.ToString(), " together (",
                                    by_tenant.Of(tenant), " held; --max_binary_bytes_per_uid)"));
    }
    return absl::OkStatus();
  }
  void AddLocked(SessionId session, const Tenant& tenant, uint64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    by_session[session] += bytes;
    by_tenant.Add(tenant, bytes);
  }

  const uint64_t max_per_session;
  mutable absl::Mutex mu;
  std::map<SessionId, uint64_t> by_session ABSL_GUARDED_BY(mu);  // none at zero
  TenantTally by_tenant ABSL_GUARDED_BY(mu);
};

BinaryCharges::BinaryCharges(uint64_t max_per_session, uint64_t max_per_tenant)
    : ledger_(std::make_shared<Held::Ledger>(max_per_session, max_per_tenant)) {}

BinaryCharges::Held::Held(std::shared_ptr<Ledger> ledger, SessionId session, Tenant tenant,
                          uint64_t bytes)
    : ledger_(std::move(ledger)), session_(session), tenant_(std::move(tenant)), bytes_(bytes) {}

BinaryCharges::Held::~Held() {
  absl::MutexLock lock(&ledger_->mu);
  auto of_session = ledger_->by_session.find(session_);
  if (of_session != ledger_->by_session.end()) {
    of_session->second -= std::min(of_session->second, bytes_);
    if (of_session->second == 0) ledger_->by_session.erase(of_session);
  }
  ledger_->by_tenant.Subtract(tenant_, bytes_);
}

absl::Status BinaryCharges::Held::Add(uint64_t bytes) {
  absl::MutexLock lock(&ledger_->mu);
  absl::Status room = ledger_->CheckRoomLocked(session_, tenant_, bytes);
  if (!room.ok()) return room;
  ledger_->AddLocked(session_, tenant_, bytes);
  bytes_ += bytes;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BinaryCharges::Held>> BinaryCharges::Charge(SessionId session,
                                                                          const Tenant& tenant,
                                                                          uint64_t bytes) {
  absl::MutexLock lock(&ledger_->mu);
  absl::Status room = ledger_->CheckRoomLocked(session, tenant, bytes);
  if (!room.ok()) return room;
  ledger_->AddLocked(session, tenant, bytes);
  return std::unique_ptr<Held>(new Held(ledger_, session, tenant, bytes));
}

std::shared_ptr<hal::Executable> BinaryCharges::Holding(std::shared_ptr<hal::Executable> executable,
                                                        std::unique_ptr<Held> charge,
                                                        Held** held) {
  struct Charged {
    std::unique_ptr<Held> charge;
    std::shared_ptr<hal::Executable> executable;  // let go first: charged until it is gone
  };
  *held = charge.get();
  auto charged = std::make_shared<Charged>(Charged{std::move(charge), std::move(executable)});
  hal::Executable* raw = charged->executable.get();
  return std::shared_ptr<hal::Executable>(std::move(charged), raw);
}

uint64_t BinaryCharges::OfSession(SessionId session) const {
  absl::ReaderMutexLock lock(&ledger_->mu);
  auto it = ledger_->by_session.find(session);
  return it == ledger_->by_session.end() ? 0 : it->second;
}

std::map<Tenant, uint64_t> BinaryCharges::ByTenant() const {
  absl::ReaderMutexLock lock(&ledger_->mu);
  return ledger_->by_tenant.all();
}

uint64_t BinaryCharges::max_per_session() const { return ledger_->max_per_session; }

uint64_t BinaryCharges::max_per_tenant() const {
  absl::ReaderMutexLock lock(&ledger_->mu);
  return ledger_->by_tenant.limit();
}

}  // namespace acld
