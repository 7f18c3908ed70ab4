// Whether absl::Mutex checks lock order at run time.
//
// Debian builds Abseil without NDEBUG, so every absl::Mutex::Lock records the
// lock in a process-wide graph guarded by one spin lock: in acld's launch path
// that cost more than the launch itself (embedded launches ran at 0.6x). Our
// optimised builds (-c opt defines NDEBUG) turn the check off; every other
// build, the test suite's included, keeps it and aborts on a lock-order cycle.
#ifndef ACLD_PROTO_ACL_LOCK_ORDER_CHECKS_H_
#define ACLD_PROTO_ACL_LOCK_ORDER_CHECKS_H_

#include "absl/synchronization/mutex.h"

namespace acld {

inline void MatchLockOrderChecksToBuild() {
#ifdef NDEBUG
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
}

}  // namespace acld

#endif  // ACLD_PROTO_ACL_LOCK_ORDER_CHECKS_H_
