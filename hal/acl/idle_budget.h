// What all streams of a device may keep for reuse while idle, counted
// together.
//
// Keeping a vendor resource that a stream may need again (a notify whose wait
// passed, a grown kernel argument ring) saves the vendor calls that make and
// destroy it on the next burst. Without a bound across streams, a tenant's
// idle streams would hold as many as they ever used at once: notifies are
// few per device and shared by every tenant, and each ring pins host memory
// as large as its device memory. Past the budget, such a resource goes when
// its stream is done with it; the stream makes a new one when it needs it.
#ifndef ACLD_HAL_ACL_IDLE_BUDGET_H_
#define ACLD_HAL_ACL_IDLE_BUDGET_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace hal::acl {

class IdleBudget {
 public:
  explicit IdleBudget(uint64_t limit) : limit_(limit) {}

  // Takes `amount` unless that passes the limit.
  bool TryTake(uint64_t amount) {
    uint64_t used = used_.load();
    while (amount <= limit_ - used) {
      if (used_.compare_exchange_weak(used, used + amount)) return true;
    }
    return false;
  }
  void Give(uint64_t amount) { used_.fetch_sub(amount); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

// A device's budgets.
struct IdleBudgets {
  explicit IdleBudgets(uint64_t device_memory)
      : ring_bytes(std::min(uint64_t{64} << 20, device_memory / 64)) {}

  // Notifies kept in the streams' pools.
  IdleBudget notifies{256};
  // Bytes of grown argument rings kept while no launch uses them (each that
  // much device memory and as much pinned host memory): at most 64 MiB, or
  // 1/64 of a smaller device's memory.
  IdleBudget ring_bytes;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_IDLE_BUDGET_H_
