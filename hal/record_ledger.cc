#include "hal/record_ledger.h"

#include <utility>

namespace hal {

void RecordLedger::Submitted(uint64_t record) {
  if (!Settled(record)) pending_.insert(record);
}

bool RecordLedger::Settled(uint64_t record) const {
  return record <= settled_through_ || settled_above_.count(record) > 0;
}

bool RecordLedger::Settle(uint64_t record, bool ran, std::vector<Wake>& woken) {
  if (record == 0 || Settled(record)) return false;
  pending_.erase(record);
  if (!ran) {
    dropped_.insert(record);
    if (dropped_.size() > kDroppedKept) dropped_.erase(dropped_.begin());
  }
  settled_above_.insert(record);
  while (!settled_above_.empty() && *settled_above_.begin() == settled_through_ + 1) {
    settled_above_.erase(settled_above_.begin());
    ++settled_through_;
  }
  auto [first, last] = waiters_.equal_range(record);
  for (auto it = first; it != last; ++it) woken.push_back(std::move(it->second.wake));
  waiters_.erase(first, last);
  return true;
}

uint64_t RecordLedger::WaitFor(uint64_t record, Wake wake) {
  if (record == 0 || Settled(record)) return 0;
  const uint64_t id = next_wait_id_++;
  waiters_.emplace(record, Waiter{id, std::move(wake)});
  return id;
}

void RecordLedger::CancelWait(uint64_t wait_id) {
  // Bounded by the streams waiting on this event, one wait each.
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->second.id == wait_id) {
      waiters_.erase(it);
      return;
    }
  }
}

}  // namespace hal
