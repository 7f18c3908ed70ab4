// Asking acld again a moment later while it is busy with this user's other
// requests (many processes of one user starting at once): its front doors
// serve a bounded number of each user's requests at a time and tell the rest
// to come back (docs/security.md).
#ifndef ACLD_CLIENT_BUSY_RETRY_H_
#define ACLD_CLIENT_BUSY_RETRY_H_

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <random>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace acl_client {

// Runs `attempt` (given the overall deadline) until it succeeds, fails other
// than `busy` says, or `timeout` would pass before the next attempt. Between
// attempts it pauses 1 ms, doubling up to 50 ms, each pause jittered so that
// a user's many processes do not all come back at once.
template <typename T>
absl::StatusOr<T> RetryWhileBusy(absl::Duration timeout,
                                 const std::function<bool(const absl::Status&)>& busy,
                                 const std::function<absl::StatusOr<T>(absl::Time)>& attempt) {
  const absl::Time deadline = absl::Now() + timeout;
  std::minstd_rand jitter(static_cast<uint32_t>(getpid()) ^
                          static_cast<uint32_t>(absl::ToUnixNanos(absl::Now())));
  absl::Duration pause = absl::Milliseconds(1);
  while (true) {
    absl::StatusOr<T> result = attempt(deadline);
    const absl::Duration wait = pause * (0.5 + (jitter() % 1000) / 2000.0);
    if (result.ok() || !busy(result.status()) || absl::Now() + wait >= deadline) return result;
    absl::SleepFor(wait);
    pause = std::min(pause * 2, absl::Milliseconds(50));
  }
}

}  // namespace acl_client

#endif  // ACLD_CLIENT_BUSY_RETRY_H_
