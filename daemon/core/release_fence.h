// What keeps a session's let-go memory alive while its opaque kernels may
// still reach it.
//
// A kernel whose ranges the backend cannot tell (a real device's:
// hal::Function::Ranges is unimplemented there) pins nothing, yet it reaches
// its session's memory by address until the device ran it. Memory the session
// lets go meanwhile (a free, a reset, its end, an import taken away) must
// therefore outlive every such launch made before: released at once, the
// device could give the address to another session's allocation, which the
// queued kernel would then write into.
//
// Each opaque launch holds a numbered ticket until the device reported or
// dropped it. Memory let go is kept until every ticket numbered up to the
// last one given out then is let go; later launches do not hold it. Memory
// let go twice (an import closed, imported and closed again) is kept once,
// until the later of the two: what the fence keeps is bounded by what the
// session can reach, and the tickets by its queued work.
#ifndef ACLD_DAEMON_CORE_RELEASE_FENCE_H_
#define ACLD_DAEMON_CORE_RELEASE_FENCE_H_

#include <cstddef>
#include <memory>

#include "daemon/core/background_release.h"

namespace acld {

// Thread-safe: it has a lock of its own, taken after the memory manager's.
class ReleaseFence {
 public:
  // More than kReleasedInPlace pieces released at once go to `background`
  // (null: released in place too).
  static constexpr size_t kReleasedInPlace = 64;
  explicit ReleaseFence(std::shared_ptr<BackgroundRelease> background = nullptr);

  // What an opaque launch holds until the device reported or dropped it.
  // Letting the last hold go may release kept memory there and then (up to
  // kReleasedInPlace pieces): never under a lock that freeing memory takes
  // (Stream::retired_).
  std::shared_ptr<void> Hold() const;
  // Keeps `memory` until every hold taken so far is let go (nothing to keep
  // when none is held). Releases nothing itself: the caller may hold a lock
  // that a release takes.
  void Defer(const std::shared_ptr<void>& memory);
  // How many pieces of memory wait for earlier holds.
  size_t kept() const;

 private:
  class State;
  class Ticket;
  std::shared_ptr<State> state_;  // also held by every ticket
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RELEASE_FENCE_H_
