#include "daemon/server/memory_sealer.h"

#include <fcntl.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "daemon/server/peer_credentials.h"

namespace acld::server {
namespace {

std::string NotDoneInTime() {
  return absl::StrCat(
      "acld could not seal or fill this user's shared memory in time (something held the file "
      "or the process: a write into it from a page that does not come, such as one of a FUSE "
      "mount that does not answer); its memory is refused until that work ends and for ",
      absl::FormatDuration(kSealCooldown), " after");
}

// The runs (sealings, fills, looks at a memory map) under way of each
// sender, and the senders refused for a while: a run of theirs did not
// finish in time, or their slow runs added up.
class Senders {
 public:
  // Counts a run of `sender` about to start; why not, when it may not.
  std::string Start(const std::string& sender) {
    absl::MutexLock lock(&mu_);
    Sender& known = senders_[sender];
    if (known.late > 0 || absl::Now() < known.refused_until) {
      return NotDoneInTime();
    }
    if (known.running >= kMaxSealingsPerSender) {
      return absl::StrCat("this user's shared memory is being sealed ", known.running,
                          " times at once already, the most acld does; ask again");
    }
    ++known.running;
    return "";
  }
  MemoryWorkCounts Count() {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    MemoryWorkCounts counts;
    for (const auto& [sender, known] : senders_) {
      counts.running += static_cast<uint32_t>(known.running);
      counts.late += static_cast<uint32_t>(known.late);
      if (known.late > 0 || now < known.refused_until) ++counts.refused_senders;
    }
    return counts;
  }
  // Its caller stopped waiting for a sealing of `sender` still under way.
  void Late(const std::string& sender) {
    absl::MutexLock lock(&mu_);
    ++senders_[sender].late;
  }
  // A run of `sender` ended after `took`; `late`: its caller had stopped
  // waiting.
  void Ended(const std::string& sender, bool late, absl::Duration took) {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    Sender& known = senders_[sender];
    --known.running;
    if (late) {
      --known.late;
      known.refused_until = now + kSealCooldown;
    }
    // Runs that end in time but slowly, one after another (fills that the
    // sender's own memory map lock holds just short of kSealWait), hold the
    // threads that wait for them as late ones would: past kSlowBudget of
    // them within kSealCooldown the sender is refused as after a late one.
    if (took >= kSlowRun) {
      if (now - known.slow_since > kSealCooldown) {
        known.slow_since = now;
        known.slow = absl::ZeroDuration();
      }
      known.slow += took;
      if (known.slow > kSlowBudget) {
        known.refused_until = now + kSealCooldown;
        known.slow = absl::ZeroDuration();
      }
    }
    const bool slow_counted = known.slow > absl::ZeroDuration() &&
                              now - known.slow_since <= kSealCooldown;
    if (known.running == 0 && known.late == 0 && now >= known.refused_until && !slow_counted) {
      senders_.erase(sender);
    }
  }

 private:
  struct Sender {
    int running = 0;  // sealings under way
    int late = 0;     // of which nobody waits for any more
    absl::Time refused_until = absl::InfinitePast();
    absl::Duration slow;  // slow runs' time since slow_since
    absl::Time slow_since = absl::InfinitePast();
  };
  absl::Mutex mu_;
  // Senders with sealings under way, or refused for a while: at most the
  // senders whose memory took too long (a tenant's), for kSealCooldown.
  std::map<std::string, Sender> senders_ ABSL_GUARDED_BY(mu_);
};

Senders& TheSenders() {
  static Senders* senders = new Senders;  // outlives the threads that seal
  return *senders;
}

// One run, shared by its caller and its thread.
struct Run {
  absl::Mutex mu;
  absl::Status result ABSL_GUARDED_BY(mu);
  bool done ABSL_GUARDED_BY(mu) = false;
  bool late ABSL_GUARDED_BY(mu) = false;  // the caller stopped waiting
};

}  // namespace

absl::Status RunForSender(const std::string& sender, std::function<absl::Status()> work,
                          absl::Duration wait) {
  Senders& senders = TheSenders();
  if (std::string refusal = senders.Start(sender); !refusal.empty()) {
    return absl::UnavailableError(refusal);
  }
  auto run = std::make_shared<Run>();
  try {
    std::thread([run, work = std::move(work), sender] {
      const absl::Time started = absl::Now();
      absl::Status result = work();
      absl::MutexLock lock(&run->mu);
      run->result = std::move(result);
      run->done = true;
      TheSenders().Ended(sender, run->late, absl::Now() - started);
    }).detach();
  } catch (const std::system_error&) {
    senders.Ended(sender, /*late=*/false, absl::ZeroDuration());
    return absl::ResourceExhaustedError("no thread left to work on the memory with");
  }
  absl::MutexLock lock(&run->mu);
  if (run->mu.AwaitWithTimeout(absl::Condition(&run->done), wait)) return run->result;
  run->late = true;
  senders.Late(sender);
  return absl::UnavailableError(NotDoneInTime());
}

MemoryWorkCounts CountMemoryWork() { return TheSenders().Count(); }

absl::Status SealClientMemory(int fd, uint64_t size, const std::string& sender,
                              absl::Duration wait) {
  // The thread's own reference: the caller closes its descriptor when it
  // gives up.
  auto own = std::make_shared<UniqueFd>(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own->valid()) {
    return absl::ResourceExhaustedError("no descriptor left to seal the memory with");
  }
  return RunForSender(
      sender, [own, size] { return SealAgainstHoles(own->get(), size); }, wait);
}

}  // namespace acld::server
