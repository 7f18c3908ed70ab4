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
// Launches hold the current epoch. Memory let go while an epoch is held is
// filed in it and closes it: later launches hold a new epoch, so the memory
// waits only for the launches made before it, never for a stream of later
// ones. Each epoch holds the next, so memory also waits for every launch of
// the epochs before its own.
//
// Not thread-safe: the memory manager calls it under its lock. Nothing is
// released inside a call (the caller's lock may be one that a release
// takes): what the caller should drop after its lock comes back in LetGo.
#ifndef ACLD_DAEMON_CORE_RELEASE_FENCE_H_
#define ACLD_DAEMON_CORE_RELEASE_FENCE_H_

#include <memory>
#include <vector>

namespace acld {

class ReleaseFence {
 public:
  // Epochs a call lets go, for its caller to drop after its lock.
  using LetGo = std::vector<std::shared_ptr<void>>;

  // What an opaque launch holds until the device reported or dropped it.
  std::shared_ptr<void> Hold(LetGo& let_go);
  // Keeps `memory` until every hold taken so far is let go (nothing to keep
  // when none is held).
  void Defer(const std::shared_ptr<void>& memory, LetGo& let_go);

 private:
  struct Epoch;
  // What holds take now; null once memory was filed in it (closed_).
  std::shared_ptr<Epoch> open_;
  // The epoch memory was last filed in. Not held here: only its launches
  // (and the epochs before it) keep it.
  std::weak_ptr<Epoch> closed_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RELEASE_FENCE_H_
