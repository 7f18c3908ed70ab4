// How many bytes of queued work one session may make the daemon hold: tasks
// waiting on its streams (their records, inline data, kernel arguments).
//
// Over the limit an asynchronous call waits for room, as a launch into a full
// device queue does: the caller (the session's own thread in acld, the
// application's thread in embedded mode) blocks, nothing fails. A workload
// that cannot make room by itself (its streams wait on work it has not sent
// yet) would wait forever, so after `patience` without room calls go ahead
// anyway up to a hard ceiling of twice the limit; only past it do they fail.
#ifndef ACLD_DAEMON_CORE_QUEUE_BUDGET_H_
#define ACLD_DAEMON_CORE_QUEUE_BUDGET_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace acld {

class QueueBudget : public std::enable_shared_from_this<QueueBudget> {
 public:
  // What a queued task costs beyond its payload: its record, closures,
  // bookkeeping (a kernel launch measured about 450 bytes in acld).
  static constexpr uint64_t kTaskOverheadBytes = 512;

  // `limit` 0: no limit.
  explicit QueueBudget(uint64_t limit, absl::Duration patience = absl::Seconds(10))
      : limit_(limit), patience_(patience) {}

  // Waits for room, then charges `bytes`; the charge is given back when the
  // returned hold is destroyed. ACL_ERROR_RT_MEMORY_ALLOCATION past the
  // ceiling; ACL_ERROR_RT_SOCKET_CLOSE once the budget is closed.
  absl::StatusOr<std::shared_ptr<void>> Charge(uint64_t bytes);

  // The session ended: waiters and later charges fail at once.
  void Close();

  uint64_t used() const;
  uint64_t limit() const { return limit_; }

 private:
  void Release(uint64_t bytes);

  const uint64_t limit_;
  const absl::Duration patience_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool overdrawn_ ABSL_GUARDED_BY(mu_) = false;  // waited in vain; cleared below the limit
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_QUEUE_BUDGET_H_
