// The bounded worker pool of one device: runs whichever streams have a ready
// head task, highest priority first, round-robin within a priority.
#ifndef ACLD_DAEMON_CORE_STREAM_ENGINE_H_
#define ACLD_DAEMON_CORE_STREAM_ENGINE_H_

#include <array>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace acld {

class Stream;

class StreamEngine {
 public:
  static constexpr int kPriorities = 8;

  explicit StreamEngine(int workers);
  ~StreamEngine() { Stop(); }

  // Stops and joins the workers; streams still queued are not run, and
  // MakeReady stays safe to call. Idempotent.
  void Stop();

  // Queues `stream` to have RunSome() called on a worker.
  void MakeReady(std::shared_ptr<Stream> stream, uint32_t priority);

  int worker_count() const { return static_cast<int>(workers_.size()); }

 private:
  void WorkerLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::array<std::deque<std::shared_ptr<Stream>>, kPriorities> ready_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_STREAM_ENGINE_H_
