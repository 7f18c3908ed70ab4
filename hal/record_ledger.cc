#include "hal/record_ledger.h"

#include <iterator>
#include <utility>

namespace hal {

void RecordLedger::Submitted(uint64_t record) {
  if (!Settled(record)) pending_.insert(record);
}

bool RecordLedger::Settled(uint64_t record) const {
  if (record <= settled_through_) return true;
  auto after = settled_above_.upper_bound(record);
  if (after == settled_above_.begin()) return false;
  return std::prev(after)->second >= record;
}

bool RecordLedger::Settle(uint64_t record, bool ran, std::vector<Wake>& woken) {
  if (record == 0 || Settled(record)) return false;
  pending_.erase(record);
  if (!ran) {
    dropped_.insert(record);
    if (dropped_.size() > kDroppedKept) dropped_.erase(dropped_.begin());
  }
  // Joins the run that ends just below it and the one that starts just above.
  uint64_t first = record;
  uint64_t last = record;
  auto above = settled_above_.find(record + 1);
  if (above != settled_above_.end()) {
    last = above->second;
    settled_above_.erase(above);
  }
  auto below = settled_above_.lower_bound(record);
  if (below != settled_above_.begin() && std::prev(below)->second + 1 == record) {
    --below;
    first = below->first;
  }
  settled_above_[first] = last;
  if (first == settled_through_ + 1) {
    settled_through_ = last;
    settled_above_.erase(first);
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
  if (record == 0 || Settled(record)) return 0;
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
