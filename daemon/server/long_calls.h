// Threads of acld's own for calls whose work can take long and cannot be cut
// into slices: loading a binary (copying and parsing up to
// --max_binary_bytes_per_session, or the vendor's load of it). The channel
// pool's few threads serve every session's short calls; one tenant's 256 MiB
// load there held a thread for as long as it took, and two held the whole
// pool of a two-CPU host. Here such calls wait only for each other, and take
// turns between tenants (hal::TurnQueue): a tenant with many loads queued
// holds another's one back by one load, not by all of its own. Two threads
// by default: one load that hangs (in a vendor's runtime) does not stop
// every other.
//
// What waits is bounded by its callers: each session's calls waiting in acld
// (SessionHandler's kMaxWaitingCalls), and each tenant's sessions.
#ifndef ACLD_DAEMON_SERVER_LONG_CALLS_H_
#define ACLD_DAEMON_SERVER_LONG_CALLS_H_

#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"
#include "hal/turn_queue.h"

namespace acld::server {

class LongCalls {
 public:
  explicit LongCalls(int threads = 2);
  // Drops the calls not started yet (with what they hold) and waits for
  // those running.
  ~LongCalls();
  LongCalls(const LongCalls&) = delete;
  LongCalls& operator=(const LongCalls&) = delete;

  // Runs `call` on one of the threads, in `tenant`'s turn.
  void Run(const Tenant& tenant, std::function<void()> call);

  // Calls queued and not started (for aclctl and tests).
  size_t queued() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  hal::TurnQueue<Tenant, std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_LONG_CALLS_H_
