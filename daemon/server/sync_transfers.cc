#include "daemon/server/sync_transfers.h"

#include <optional>
#include <utility>

namespace acld::server {

void SyncTransfers::Add(PiecewiseTransfer transfer, Done done) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    jobs_.push_back(Job{std::move(transfer), std::move(done)});
    if (running_) return;
    running_ = true;
  }
  threads_.post([self = shared_from_this()] { self->RunSlice(); });
}

void SyncTransfers::Close() {
  std::deque<Job> dropped;
  absl::MutexLock lock(&mu_);
  closed_ = true;
  // The slice running now, if any, took its job out and drops it when it
  // sees closed_; the others go here (their memory with them, after the lock).
  dropped.swap(jobs_);
}

bool SyncTransfers::Closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

size_t SyncTransfers::pending() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

void SyncTransfers::RunSlice() {
  std::optional<Job> job;
  {
    absl::MutexLock lock(&mu_);
    if (closed_ || jobs_.empty()) {
      running_ = false;
      return;
    }
    job.emplace(std::move(jobs_.front()));
    jobs_.pop_front();
  }
  absl::Status status;
  do {
    status = job->transfer.RunFor(slice_);
  } while (!job->transfer.finished() && !threads_.others_waiting() && !Closed());
  Done finished;
  bool more;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      running_ = false;
      return;
    }
    if (job->transfer.finished()) {
      finished = std::move(job->done);
    } else {
      jobs_.push_front(std::move(*job));
    }
    more = running_ = !jobs_.empty();
  }
  if (finished) finished(status);
  if (more) threads_.post([self = shared_from_this()] { self->RunSlice(); });
}

}  // namespace acld::server
