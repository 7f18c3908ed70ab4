#include "daemon/server/channel_pool.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

// epoll's user data for the pool's own descriptors; members count from 1.
constexpr uint64_t kPokeId = 0;
constexpr uint64_t kStopId = ~uint64_t{0};
constexpr int kEventsPerWait = 32;

void Ring(int eventfd) {
  const uint64_t one = 1;
  while (write(eventfd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

int Watch(int epoll_fd, int fd, uint64_t id, uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

// The CPUs a cgroup v2 quota ("cpu.max": "QUOTA PERIOD", or "max") gives
// this process, rounded up; nullopt without one (or without cgroup v2).
std::optional<int> CgroupCpuQuota() {
  std::ifstream membership("/proc/self/cgroup");
  std::string line;
  while (std::getline(membership, line)) {
    if (!absl::StartsWith(line, "0::")) continue;
    std::ifstream limit(absl::StrCat("/sys/fs/cgroup", line.substr(3), "/cpu.max"));
    std::string quota;
    uint64_t period = 0;
    uint64_t micros = 0;
    if (!(limit >> quota >> period) || period == 0 || !absl::SimpleAtoi(quota, &micros)) {
      return std::nullopt;  // "max": no quota
    }
    return static_cast<int>(std::min<uint64_t>((micros + period - 1) / period, 1024));
  }
  return std::nullopt;
}

}  // namespace

int ChannelPool::DefaultThreads() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int cpus = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 4;
  if (std::optional<int> quota = CgroupCpuQuota()) cpus = std::min(cpus, *quota);
  return std::clamp(cpus, 2, 4);
}

ChannelPool::ChannelPool(int threads)
    : epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      poke_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      stop_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (epoll_fd_ < 0 || poke_fd_ < 0 || stop_fd_ < 0 ||
      Watch(epoll_fd_, poke_fd_, kPokeId, EPOLLIN | EPOLLET) != 0 ||
      // Level-triggered and never read: once rung, every thread sees it.
      Watch(epoll_fd_, stop_fd_, kStopId, EPOLLIN) != 0) {
    spdlog::critical("channel pool: cannot set up epoll: {}", std::strerror(errno));
    std::abort();  // at start-up, before any session: nothing to save
  }
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

ChannelPool::~ChannelPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  Ring(stop_fd_);
  for (std::thread& thread : threads_) thread.join();
  close(stop_fd_);
  close(poke_fd_);
  close(epoll_fd_);
}

absl::StatusOr<uint64_t> ChannelPool::Add(int doorbell, std::shared_ptr<Member> member,
                                          const Tenant& tenant) {
  auto entry = std::make_shared<Entry>();
  entry->member = std::move(member);
  entry->doorbell = doorbell;
  entry->tenant = tenant;
  uint64_t id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    entries_[id] = entry;
  }
  if (Watch(epoll_fd_, doorbell, id, EPOLLIN | EPOLLET) != 0) {
    const std::string error = std::strerror(errno);
    absl::MutexLock lock(&mu_);
    entries_.erase(id);
    return absl::InvalidArgumentError(absl::StrCat("cannot wait on the doorbell: ", error));
  }
  Schedule(entry, /*on_pool_thread=*/false);
  return id;
}

void ChannelPool::Remove(uint64_t id) {
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    entry = std::move(it->second);
    entries_.erase(it);
  }
  // The client holds the eventfd too, so closing ours would not take it out
  // of the set. An event already delivered for it finds no entry.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, entry->doorbell, nullptr);
}

void ChannelPool::Wake(uint64_t id) {
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    entry = it->second;
  }
  Schedule(entry, /*on_pool_thread=*/false);
}

void ChannelPool::Post(std::function<void()> task, const Tenant& tenant) {
  bool poke;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    runnable_.Push(tenant, std::move(task));
    waiting_.store(QueuedLocked(), std::memory_order_relaxed);
    poke = AnyoneSleepsLocked();
  }
  if (poke) Poke();
}

size_t ChannelPool::members() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

void ChannelPool::Poke() { Ring(poke_fd_); }

void ChannelPool::Schedule(const std::shared_ptr<Entry>& entry, bool on_pool_thread) {
  if (entry->scheduled.exchange(true)) {
    entry->again.store(true);  // running or queued: it runs once more
    return;
  }
  bool poke;
  {
    absl::MutexLock lock(&mu_);
    QueueTurnLocked(entry);
    // A pool thread runs what it queued itself; another one is woken only
    // when there is more than that (a wake-up costs a context switch, often
    // more than the turn), and only if one sleeps.
    poke = AnyoneSleepsLocked() && (!on_pool_thread || QueuedLocked() > 1);
  }
  if (poke) Poke();
}

void ChannelPool::QueueTurnLocked(const std::shared_ptr<Entry>& entry) {
  auto turn = [this, entry] { RunTurn(entry); };
  if (entry->turns.load(std::memory_order_relaxed) < kTurnsAhead) {
    ahead_.push_back(std::move(turn));
  } else {
    runnable_.Push(entry->tenant, std::move(turn));
  }
  waiting_.store(QueuedLocked(), std::memory_order_relaxed);
}

std::function<void()> ChannelPool::TakeLocked() {
  std::function<void()> task;
  if (!ahead_.empty() && (runnable_.empty() || ahead_in_a_row_ < kAheadInARow)) {
    task = std::move(ahead_.front());
    ahead_.pop_front();
    ++ahead_in_a_row_;
  } else {
    ahead_in_a_row_ = 0;
    if (!runnable_.empty()) task = runnable_.Pop();
  }
  waiting_.store(QueuedLocked(), std::memory_order_relaxed);
  return task;
}

void ChannelPool::RunTurn(const std::shared_ptr<Entry>& entry) {
  if (entry->turns.load(std::memory_order_relaxed) < kTurnsAhead) {
    entry->turns.fetch_add(1, std::memory_order_relaxed);
  }
  bool more;
  int serves = 0;
  do {
    entry->again.store(false);
    more = entry->member->Serve();
  } while (!more && entry->again.load() && ++serves < kServesPerTurn);
  // Still rung after its last serve: it waits behind the others, as a member
  // with more to do does (its next turn clears `again`).
  more = more || entry->again.load();
  if (more) {
    {
      absl::MutexLock lock(&mu_);
      QueueTurnLocked(entry);
    }
    return;
  }
  entry->scheduled.store(false);
  // A ring between the last check and now found it scheduled: serve it.
  if (entry->again.exchange(false)) Schedule(entry, /*on_pool_thread=*/true);
}

void ChannelPool::Loop() {
  epoll_event events[kEventsPerWait];
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      task = TakeLocked();
      if (!task) ++sleeping_;  // under the lock that queues work: no Poke is missed
    }
    // Between two tasks, the doorbells that rang meanwhile are collected
    // without sleeping; with nothing to run, the thread sleeps until one rings.
    const int ready = epoll_wait(epoll_fd_, events, kEventsPerWait, task ? 0 : -1);
    if (!task) {
      absl::MutexLock lock(&mu_);
      --sleeping_;
    }
    ScheduleRung(events, ready);
    if (task) task();
  }
}

void ChannelPool::ScheduleRung(const epoll_event* events, int ready) {
  for (int i = 0; i < ready; ++i) {
    const uint64_t id = events[i].data.u64;
    if (id == kPokeId || id == kStopId) continue;
    std::shared_ptr<Entry> entry;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(id);
      if (it != entries_.end()) entry = it->second;
    }
    if (entry != nullptr) Schedule(entry, /*on_pool_thread=*/true);
  }
}

bool ChannelPool::OthersRang() {
  epoll_event events[kEventsPerWait];
  ScheduleRung(events, epoll_wait(epoll_fd_, events, kEventsPerWait, 0));
  return OthersWaiting();
}

}  // namespace acld::server
