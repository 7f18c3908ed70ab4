// Lets go of many pieces of memory off the thread that happened to drop them.
//
// A release fence's last ticket (release_fence.h) may release a session's
// whole kept memory at once: up to --max_allocations_per_session pieces,
// each a device free. The thread that lets the ticket go is whichever
// reported or dropped the launch; on --backend=acl it is often the device's
// completion dispatcher, whose delay every tenant's completions on that
// device would share. Large releases go to one thread of their own instead,
// started when needed and gone once nothing is queued.
#ifndef ACLD_DAEMON_CORE_BACKGROUND_RELEASE_H_
#define ACLD_DAEMON_CORE_BACKGROUND_RELEASE_H_

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace acld {

class BackgroundRelease {
 public:
  BackgroundRelease() = default;
  // Lets go of what is still queued, then joins the thread.
  ~BackgroundRelease();
  BackgroundRelease(const BackgroundRelease&) = delete;
  BackgroundRelease& operator=(const BackgroundRelease&) = delete;

  // Lets go of `memory` on the release thread (here, once stopping or when
  // no thread can be started).
  void Release(std::vector<std::shared_ptr<void>> memory);
  // Pieces queued and not yet let go of.
  size_t queued() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  std::deque<std::vector<std::shared_ptr<void>>> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // thread_ has not left Loop
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_BACKGROUND_RELEASE_H_
