// A run queue that takes turns between tenants: each tenant's turns wait in
// its own queue, and the tenants with turns waiting take one each in turn.
// A tenant with hundreds of sessions (one uid may open 256) thus gets one
// turn for another tenant's one, not one per session.
//
// Not synchronized: its owner's lock guards it.
#ifndef ACLD_DAEMON_SERVER_TENANT_TURNS_H_
#define ACLD_DAEMON_SERVER_TENANT_TURNS_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <utility>

#include "daemon/core/tenant.h"

namespace acld::server {

class TenantTurns {
 public:
  using Turn = std::function<void()>;

  void Push(const Tenant& tenant, Turn turn) {
    std::deque<Turn>& turns = waiting_[tenant];
    if (turns.empty()) order_.push_back(tenant);
    turns.push_back(std::move(turn));
    ++size_;
  }
  // The next tenant's oldest turn; empty when none waits.
  Turn Pop() {
    if (order_.empty()) return nullptr;
    auto tenant = waiting_.find(order_.front());
    order_.pop_front();
    Turn turn = std::move(tenant->second.front());
    tenant->second.pop_front();
    if (tenant->second.empty()) {
      waiting_.erase(tenant);
    } else {
      order_.push_back(tenant->first);
    }
    --size_;
    return turn;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::map<Tenant, std::deque<Turn>> waiting_;  // never an empty deque
  std::deque<Tenant> order_;                    // the tenants in waiting_
  size_t size_ = 0;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_TENANT_TURNS_H_
