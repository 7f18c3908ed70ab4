// The records of one event, for a backend: which have settled, and who waits
// for one.
//
// The caller numbers an event's records (hal::Stream::RecordEvent) in the
// order it makes them; streams submit them in their own order, and a record
// may never be submitted at all (its task was dropped: ForgetRecord). A record
// settles once: when it ran, when an abort dropped it, or when it is
// forgotten; the ledger remembers which of the latest records settled without
// running (Dropped), for waits that must not pass for those. Waits are for one record, so a wait never waits for a record
// made after it.
//
// Not synchronized: the backend's event calls it under its own lock and runs
// the wake-ups it gets back after unlocking.
#ifndef ACLD_HAL_RECORD_LEDGER_H_
#define ACLD_HAL_RECORD_LEDGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "hal/settled_records.h"

namespace hal {

class RecordLedger {
 public:
  using Wake = std::function<void()>;

  // `record` was submitted to a stream.
  void Submitted(uint64_t record);
  // `record` settled (`ran`: it ran; otherwise it was dropped or forgotten).
  // True when it had not settled before; its waiters' wake-ups are appended
  // to `woken`.
  bool Settle(uint64_t record, bool ran, std::vector<Wake>& woken);
  bool Settled(uint64_t record) const { return settled_.Contains(record); }
  // `record` settled without running: one of the latest kDroppedKept such.
  bool Dropped(uint64_t record) const { return dropped_.count(record) != 0; }
  static constexpr size_t kDroppedKept = 1024;
  // Every record submitted so far has settled.
  bool AllSubmittedSettled() const { return pending_.empty(); }
  // The records submitted and not settled, lowest first.
  const std::set<uint64_t>& pending() const { return pending_; }
  // 0 when `record` has settled (0 counts as settled); otherwise keeps
  // `wake` for when it does and returns the wait's id.
  uint64_t WaitFor(uint64_t record, Wake wake);
  // The wait `wait_id` is not wanted any more (its stream dropped or stopped
  // the wait): its wake is forgotten, not kept until a record that may never
  // settle does. False when it was not kept (its wake was handed out already).
  bool CancelWait(uint64_t wait_id);
  // Waits kept now.
  size_t waiting() const { return waiters_.size(); }
  // Runs of settled records kept above the lowest unsettled one (for tests).
  size_t settled_runs() const { return settled_.runs(); }

 private:
  SettledRecords settled_;
  std::set<uint64_t> pending_;
  std::set<uint64_t> dropped_;  // the latest kDroppedKept records settled without running
  struct Waiter {
    uint64_t id;
    Wake wake;
  };
  std::multimap<uint64_t, Waiter> waiters_;  // by record
  // The same waits by id: an abort cancels each of its stream's waits, and a
  // scan for each would be quadratic (under the event's lock).
  std::unordered_map<uint64_t, std::multimap<uint64_t, Waiter>::iterator> waiters_by_id_;
  uint64_t next_wait_id_ = 1;
};

}  // namespace hal

#endif  // ACLD_HAL_RECORD_LEDGER_H_
