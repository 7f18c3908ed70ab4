#include "daemon/server/memory_sealer.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <system_error>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "daemon/server/peer_credentials.h"

namespace acld::server {
namespace {

// Senders whose sealing did not finish in time.
class SlowSenders {
 public:
  // Why `sender`'s memory is refused now; empty when it is not.
  std::string RefusalFor(const std::string& sender) {
    absl::MutexLock lock(&mu_);
    auto it = senders_.find(sender);
    if (it == senders_.end()) return "";
    if (!it->second.waiting && absl::Now() >= it->second.until) {
      senders_.erase(it);
      return "";
    }
    return absl::StrCat(
        "acld could not seal this user's shared memory within ", absl::FormatDuration(kSealWait),
        " (something held the file: a write into it from a page that does not come, such as "
        "one of a FUSE mount that does not answer); its memory is refused for ",
        absl::FormatDuration(kSealCooldown), " after that");
  }
  void StartedWaiting(const std::string& sender) {
    absl::MutexLock lock(&mu_);
    senders_[sender].waiting = true;
  }
  void StoppedWaiting(const std::string& sender) {
    absl::MutexLock lock(&mu_);
    Slow& slow = senders_[sender];
    slow.waiting = false;
    slow.until = absl::Now() + kSealCooldown;
  }

 private:
  struct Slow {
    bool waiting = false;
    absl::Time until = absl::InfinitePast();
  };
  absl::Mutex mu_;
  std::map<std::string, Slow> senders_ ABSL_GUARDED_BY(mu_);
};

SlowSenders& TheSlowSenders() {
  static SlowSenders* senders = new SlowSenders;  // outlives the threads that wait
  return *senders;
}

// One sealing, shared by its caller and its thread.
struct Sealing {
  absl::Mutex mu;
  absl::Status result ABSL_GUARDED_BY(mu);
  bool done ABSL_GUARDED_BY(mu) = false;
  bool abandoned ABSL_GUARDED_BY(mu) = false;  // the caller stopped waiting
};

}  // namespace

absl::Status SealClientMemory(int fd, uint64_t size, const std::string& sender,
                              absl::Duration wait) {
  SlowSenders& slow = TheSlowSenders();
  if (std::string refusal = slow.RefusalFor(sender); !refusal.empty()) {
    return absl::UnavailableError(refusal);
  }
  // The thread's own reference: the caller closes its descriptor when it
  // gives up.
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return absl::ResourceExhaustedError("no descriptor left to seal the memory with");
  auto sealing = std::make_shared<Sealing>();
  try {
    std::thread([sealing, own, size, sender] {
      absl::Status result = SealAgainstHoles(own, size);
      close(own);
      absl::MutexLock lock(&sealing->mu);
      sealing->result = std::move(result);
      sealing->done = true;
      if (sealing->abandoned) TheSlowSenders().StoppedWaiting(sender);
    }).detach();
  } catch (const std::system_error&) {
    close(own);
    return absl::ResourceExhaustedError("no thread left to seal the memory on");
  }
  absl::MutexLock lock(&sealing->mu);
  if (sealing->mu.AwaitWithTimeout(absl::Condition(&sealing->done), wait)) return sealing->result;
  sealing->abandoned = true;
  slow.StartedWaiting(sender);
  return absl::UnavailableError(slow.RefusalFor(sender));
}

}  // namespace acld::server
