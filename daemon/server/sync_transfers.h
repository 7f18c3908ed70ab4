// A session's synchronous copies and fills too large to run where their
// requests are read (daemon/core/piecewise_transfer.h): run a slice at a time
// on the channel pool, in the order they came.
//
// At most one slice of a session's transfers is queued or running at once,
// and each goes to the back of the pool's run queue: however many transfers a
// session queues (one per waiting thread of its process), it takes one turn
// in each round of everyone's, and no pool thread is held for more than about
// a slice while other work waits for one. While none does, a slice goes on:
// handing every 500 µs of an idle pool's copy to the next thread cost a
// 256 MiB copy from pinned memory 40 % of its speed.
#ifndef ACLD_DAEMON_SERVER_SYNC_TRANSFERS_H_
#define ACLD_DAEMON_SERVER_SYNC_TRANSFERS_H_

#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/piecewise_transfer.h"

namespace acld::server {

class SyncTransfers : public std::enable_shared_from_this<SyncTransfers> {
 public:
  // The shared threads the slices run on (the channel pool's).
  struct Threads {
    // Runs a task on one of them soon, after the work queued before it
    // (ChannelPool::Post).
    std::function<void(std::function<void()>)> post;
    // Whether other work waits for one of them, asked from one of them
    // (ChannelPool::OthersRang): while none does, a slice goes on.
    std::function<bool()> others_waiting;
  };
  using Done = std::function<void(absl::Status)>;

  // How long a slice runs at least (about as long as a turn in the channel
  // pool), and then for as long as nothing else waits for a thread.
  static constexpr absl::Duration kSlice = absl::Microseconds(500);

  explicit SyncTransfers(Threads threads, absl::Duration slice = kSlice)
      : threads_(std::move(threads)), slice_(slice) {}

  // Runs `transfer` after those added before it; then `done` with its outcome.
  void Add(PiecewiseTransfer transfer, Done done);
  // Drops what has not finished, without calling their `done` (the session
  // ended: nobody waits for them, and their memory may go).
  void Close();

  // Transfers not finished yet (for tests).
  size_t pending() const;

 private:
  struct Job {
    PiecewiseTransfer transfer;
    Done done;
  };
  void RunSlice();
  // A session that ended stops a slice that would go on.
  bool Closed() const;

  const Threads threads_;
  const absl::Duration slice_;
  mutable absl::Mutex mu_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  // A slice is queued or running (it queues the next one).
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SYNC_TRANSFERS_H_
