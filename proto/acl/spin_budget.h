// How long a waiter on a session channel's ring (message_ring.h) polls
// before it sleeps, learned from what its waits found.
//
// A sleep and its wake-up cost a syscall and a context switch on each side,
// and on some hosts a wake-up on another core costs tens of microseconds,
// while a peer that is streaming publishes again within a few. So a waiter
// first polls, for at most the budget, which adapts:
//  - a poll that found what it waited for doubles the budget (the peer keeps
//    up), one that did not halves it, down to kMinNs (kept so that a peer
//    that speeds up again is noticed);
//  - halving alone has a trap: when both sides sleep, each one's poll fails
//    because the other is still waking up, both budgets shrink and both keep
//    sleeping. So a waiter also learns from its sleeps: when what it waited
//    for came within kMaxNs of the wait's start, a poll that long would have
//    caught it, and the budget grows to cover it (Slept).
//  - that lesson is a guess, and the next poll tests it. On a busy host a
//    peer that is woken takes tens of microseconds to get a core, so its
//    sleeps look short while polls that long still fail; trusting every
//    such sleep kept the budgets of a thousand sessions up and acld's pool
//    threads polling most of their time (docs/performance.md, "Runs of
//    2026-12-02, session 21"). So a poll that fails right after a sleep
//    raised the budget makes the waiter ignore the next sleeps, twice as many
//    each time this happens again (up to kMaxSleepsIgnored), and a poll that
//    succeeds halves that count. Caught in the trap above, the first raise
//    is followed by a poll that succeeds, so nothing is ignored.
// An idle waiter polls at most kMaxNs per wait and never between waits; what
// the peer does only decides whether polls succeed, so the budget stays
// within its bounds whatever the peer is.
//
// A poll gives its core away (sched_yield) between its clock reads: on a
// host with fewer cores than busy parties (a host-func chain is acld's
// thread, the client's reader and its callback thread; many clients are
// many), a poller that kept its core would keep out the very thread it waits
// for until the scheduler's next tick. Yielding, a poll costs the others
// nothing, and the budget can be long enough to cover a whole round trip
// across threads (kMaxNs). A/B in docs/performance.md, "Polls that yield".
#ifndef ACLD_PROTO_ACL_SPIN_BUDGET_H_
#define ACLD_PROTO_ACL_SPIN_BUDGET_H_

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace acld {

class SpinBudget {
 public:
  static constexpr int64_t kMinNs = 500;
  static constexpr int64_t kInitialNs = 2000;
  static constexpr int64_t kMaxNs = 200000;

  // At most this many sleeps in a row teach nothing: a waiter whose lessons
  // keep failing still tries one about every this many waits.
  static constexpr int kMaxSleepsIgnored = 128;

  int64_t ns() const { return ns_; }
  void Succeeded() {
    ns_ = std::min(ns_ * 2, kMaxNs);
    raised_by_sleep_ = false;
    sleeps_to_ignore_ /= 2;
    sleeps_ignored_left_ = std::min(sleeps_ignored_left_, sleeps_to_ignore_);
  }
  void Failed() {
    ns_ = std::max(ns_ / 2, kMinNs);
    if (raised_by_sleep_) {
      raised_by_sleep_ = false;
      sleeps_to_ignore_ = std::min(2 * sleeps_to_ignore_ + 1, kMaxSleepsIgnored);
      sleeps_ignored_left_ = sleeps_to_ignore_;
    }
  }
  // A wait that slept ended `waited_ns` after it began.
  void Slept(int64_t waited_ns) {
    if (waited_ns < 0 || waited_ns > kMaxNs) return;
    if (sleeps_ignored_left_ > 0) {
      --sleeps_ignored_left_;
      return;
    }
    const int64_t covering = std::min(kMaxNs, waited_ns + waited_ns / 2);
    if (covering > ns_) {
      ns_ = covering;
      raised_by_sleep_ = true;
    }
  }
  // How many of the next sleeps teach nothing (for tests).
  int sleeps_ignored_left() const { return sleeps_ignored_left_; }

  // Polls `ready` (a callable returning bool) for at most the budget, and
  // adapts the budget to the outcome. True when `ready` said so.
  template <typename Ready>
  bool Poll(const Ready& ready) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 1; i <= kMaxIterations; ++i) {
      Relax();
      if (ready()) {
        Succeeded();
        return true;
      }
      if (i % kPollsPerClockRead == 0) {
        if (NanosSince(start) >= ns_) break;
        // See the top of this file. Not at the floor: a budget that short
        // learned that polls fail, and its one yield would only add a
        // context switch to the sleep that follows.
        if (ns_ > kMinNs) sched_yield();
      }
    }
    Failed();
    return false;
  }

  static int64_t NanosSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - start)
        .count();
  }

  // Tells the core that this is a spin-wait loop: saves power, yields the
  // core to its hyper-thread sibling (which may be the peer) and avoids the
  // memory-order mis-speculation penalty when the loop exits.
  static void Relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }

 private:
  // Reading the clock costs about as much as a few pauses; read it every few.
  static constexpr int kPollsPerClockRead = 8;
  // A backstop in case the clock does not advance: bounds the poll by itself.
  static constexpr int kMaxIterations = 1 << 16;

  int64_t ns_ = kInitialNs;
  // Whether the last change to ns_ was a sleep's lesson (the next poll
  // tests it).
  bool raised_by_sleep_ = false;
  // How many sleeps the next failed lesson makes the waiter ignore, and how
  // many it still ignores now.
  int sleeps_to_ignore_ = 0;
  int sleeps_ignored_left_ = 0;
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_SPIN_BUDGET_H_
