#include "hal/record_ledger.h"

#include <utility>

namespace hal {

void RecordLedger::Submitted(uint64_t record) {
  if (!Settled(record)) pending_.insert(record);
}

bool RecordLedger::Settle(uint64_t record, bool ran, std::vector<Wake>& woken) {
  if (!settled_.Add(record)) return false;
  pending_.erase(record);
  if (!ran) {
    dropped_.insert(record);
    if (dropped_.size() > kDroppedKept) dropped_.erase(dropped_.begin());
  }
  auto [begin, end] = waiters_.equal_range(record);
  for (auto it = begin; it != end; ++it) {
    woken.push_back(std::move(it->second.wake));
    waiters_by_id_.erase(it->second.id);
  }
  waiters_.erase(begin, end);
  return true;
}

uint64_t RecordLedger::WaitFor(uint64_t record, Wake wake) {
  if (Settled(record)) return 0;
  const uint64_t id = next_wait_id_++;
  waiters_by_id_[id] = waiters_.emplace(record, Waiter{id, std::move(wake)});
  return id;
}

bool RecordLedger::CancelWait(uint64_t wait_id) {
  auto it = waiters_by_id_.find(wait_id);
  if (it == waiters_by_id_.end()) return false;
  waiters_.erase(it->second);
  waiters_by_id_.erase(it);
  return true;
}

}  // namespace hal
