// A single-producer single-consumer ring of framed messages in memory shared
// by two processes, for a channel whose other end may be hostile.
//
// The ring lives in a region the caller maps (e.g. a MAP_SHARED memfd mapping);
// this class never maps or unmaps anything. The region holds a Header (the two
// indices and the futex words, each on its own cache line so that the two
// sides do not bounce one line between their cores) followed by `capacity`
// bytes of data. `head` and `tail` count every byte ever published and
// consumed; `index & (capacity - 1)` is a byte's place in the data area. A
// message is a 4-byte little-endian length followed by its bytes, and may wrap
// around the end of the data area.
//
// Threat model: the peer process can write any value to any byte of the
// region at any moment, including while this side is reading it. So each side
//  - keeps its own index privately and only publishes it, never trusting the
//    copy in shared memory;
//  - reads the peer's index once per operation, validates it against what it
//    already knows, and uses only that validated copy;
//  - reads a message's length once, validates it, and copies the bytes out
//    before releasing them (it never hands out pointers into the region).
// What the peer can do: send garbage (message contents are untrusted input),
// stall the channel, make a waiter wake spuriously or sleep until its
// deadline. What it cannot do: make this side access memory outside the
// region, crash, allocate more than max_message bytes per message, or loop
// without bound. Once corruption is seen, the side stays failed and returns
// the same DataLoss error from every call: the channel is to be torn down.
//
// Not covered here: the creator must keep the region's size fixed for the
// peer (seal a memfd with F_SEAL_SHRINK | F_SEAL_GROW before sharing it), or a
// peer that truncates the file turns an access into SIGBUS.
//
// Linux only: the waits use futex(2) on shared (not FUTEX_PRIVATE_FLAG) words
// so that they work across processes.
//
// A side that serves many rings from a few threads cannot sleep on one futex
// word: it waits in epoll(7) instead, on an eventfd its peer was given as the
// ring's doorbell (SetPeerDoorbell). Such a side never blocks in this class:
// it calls ArmWakeup() before it goes back to epoll, and the peer writes the
// doorbell instead of waking the futex word.
#ifndef ACLD_PROTO_ACL_MESSAGE_RING_H_
#define ACLD_PROTO_ACL_MESSAGE_RING_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/acl/spin_budget.h"

namespace acld {

class MessageRing {
 public:
  static constexpr size_t kCacheLineBytes = 64;
  static constexpr size_t kLengthBytes = 4;
  static constexpr size_t kMinCapacity = size_t{4} << 10;
  static constexpr size_t kMaxCapacity = size_t{1} << 30;

  // The start of the region: part of the contract between the two processes.
  // Every field sits on its own cache line: the producer writes `head` and
  // `data_seq` while the consumer writes `tail` and `space_seq`, and the
  // waiting flags are written only by the side about to sleep.
  struct Header {
    // Bytes ever published by the producer.
    alignas(kCacheLineBytes) std::atomic<uint64_t> head;
    // Bytes ever consumed by the consumer.
    alignas(kCacheLineBytes) std::atomic<uint64_t> tail;
    // Non-zero while the consumer is (about to be) asleep on `data_seq`.
    alignas(kCacheLineBytes) std::atomic<uint32_t> consumer_waiting;
    // Futex word: bumped by the producer after a publish the consumer waits for.
    alignas(kCacheLineBytes) std::atomic<uint32_t> data_seq;
    // Non-zero while the producer is (about to be) asleep on `space_seq`.
    alignas(kCacheLineBytes) std::atomic<uint32_t> producer_waiting;
    // Futex word: bumped by the consumer after a consume the producer waits for.
    alignas(kCacheLineBytes) std::atomic<uint32_t> space_seq;
  };
  // Index arithmetic and the futex words need these, in both processes.
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "a lock-based atomic would put a lock in shared memory");
  static_assert(std::atomic<uint32_t>::is_always_lock_free,
                "a lock-based atomic would put a lock in shared memory");
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
                "futex(2) operates on a plain 32-bit word");
  static_assert(sizeof(Header) % kCacheLineBytes == 0, "data must start on a cache line");

  // Whether `capacity` is a power of two in [kMinCapacity, kMaxCapacity].
  static bool IsValidCapacity(size_t capacity);
  // The bytes a ring of `capacity` data bytes needs: the header, then the data.
  static size_t RegionBytes(size_t capacity) { return sizeof(Header) + capacity; }
  // Formats a fresh, empty ring in `region` (RegionBytes(capacity) bytes,
  // aligned to kCacheLineBytes). The creator does this once, before the region
  // is shared; attaching a Producer or Consumer does not format.
  static absl::Status Format(void* region, size_t capacity);
  // The header of `region` (for tests and diagnostics; the sides keep theirs).
  static Header* HeaderOf(void* region) { return static_cast<Header*>(region); }

  class Producer;
  class Consumer;
};

// The writing side. One Producer per ring, attached to a freshly formatted
// region: its head starts at 0, which is where Format left it.
class MessageRing::Producer {
 public:
  // Messages longer than `max_message` (at most capacity - 4) are refused. A
  // bad argument leaves the object failed with InvalidArgument.
  Producer(void* region, size_t capacity, size_t max_message);
  Producer(Producer&&) = default;
  Producer& operator=(Producer&&) = default;

  // Appends `message`: true when published, false when there is no room now
  // (then WaitForSpace). Never blocks. InvalidArgument when the message is
  // longer than max_message (the producer stays usable); DataLoss when the
  // consumer corrupted the ring (then every later call fails the same way).
  absl::StatusOr<bool> TryWrite(absl::string_view message);

  // Returns when there may be room for the message the last TryWrite had no
  // room for (any message, if none was refused), or at `deadline`, whichever
  // comes first: reaching the deadline is not an error. Spins briefly, then
  // sleeps on a futex. DataLoss when the ring is corrupt.
  absl::Status WaitForSpace(absl::Time deadline);

  // Every WaitForSpace, running now (on another thread) or later, returns at
  // once: this side is shutting down.
  void Interrupt();

  // For a producer that waits in epoll rather than in WaitForSpace: declares
  // it asleep until the consumer frees room (the consumer then rings its
  // doorbell). True when the room the last refused TryWrite needed is there
  // already: then nothing was declared and the caller writes on. Never blocks.
  absl::StatusOr<bool> ArmWakeup();
  // Awake again (after the doorbell rang): the consumer need not ring it.
  void Disarm();
  // The consumer waits in epoll on `eventfd`: wake it by writing there
  // rather than on the futex word. -1: the futex word (the default).
  void SetPeerDoorbell(int eventfd) { peer_doorbell_ = eventfd; }

  // Whether the consumer has taken everything published (false also when the
  // ring is corrupt: then the next write says so).
  bool Drained();

  // OK, or the error that made this producer unusable.
  const absl::Status& status() const { return status_; }

 private:
  // The consumer's tail, read once and validated; fails the producer if bad.
  absl::StatusOr<uint64_t> LoadTail();
  absl::StatusOr<bool> HasWantedSpace();
  absl::Status Fail(absl::Status status);

  Header* header_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t max_message_ = 0;
  // The only trusted copy of head: shared memory gets it, never gives it.
  uint64_t head_ = 0;
  // The last validated tail: a new one must lie between it and head_.
  uint64_t seen_tail_ = 0;
  // Frame bytes the last refused TryWrite needed: what WaitForSpace waits for.
  uint64_t wanted_space_ = kLengthBytes;
  int peer_doorbell_ = -1;
  SpinBudget spin_;
  absl::Status status_;
  // Heap-held so that the side stays movable.
  std::unique_ptr<std::atomic<bool>> interrupted_ = std::make_unique<std::atomic<bool>>(false);
};

// The reading side. One Consumer per ring, attached to a freshly formatted
// region: its tail starts at 0, which is where Format left it.
class MessageRing::Consumer {
 public:
  // `max_message` (at most capacity - 4) bounds what a read accepts and
  // allocates. A bad argument leaves the object failed with InvalidArgument.
  Consumer(void* region, size_t capacity, size_t max_message);
  Consumer(Consumer&&) = default;
  Consumer& operator=(Consumer&&) = default;

  // The next message, copied out of the ring; nullopt when the ring is empty.
  // DataLoss when the producer corrupted the ring (then every later call fails
  // the same way).
  absl::StatusOr<std::optional<std::string>> TryRead();

  // Returns when a message may be there, or at `deadline`, whichever comes
  // first: reaching the deadline is not an error. Spins briefly, then sleeps
  // on a futex. DataLoss when the ring is corrupt.
  absl::Status WaitForData(absl::Time deadline);

  // Every WaitForData, running now (on another thread) or later, returns at
  // once: this side is shutting down.
  void Interrupt();

  // For a consumer that waits in epoll rather than in WaitForData: declares
  // it asleep until the producer publishes (the producer then rings its
  // doorbell). True when a message is there already: then nothing was
  // declared and the caller reads on. Never blocks.
  absl::StatusOr<bool> ArmWakeup();
  // Awake again (after the doorbell rang): the producer need not ring it.
  void Disarm();
  // Polls for a message for a moment (the adaptive spin of WaitForData,
  // without the sleep): true when one is there. For a side that would rather
  // not go back to epoll when its peer is about to publish again.
  absl::StatusOr<bool> SpinForData();
  // The producer waits in epoll on `eventfd`: wake it by writing there
  // rather than on the futex word. -1: the futex word (the default).
  void SetPeerDoorbell(int eventfd) { peer_doorbell_ = eventfd; }

  // While the reading thread is away (running a callback), another thread
  // may watch the ring for it. These touch only the shared header, never
  // this object's state, so they are safe on any thread; what they say is a
  // hint the reader validates when it reads.
  //
  // The reader, leaving: declares this side waiting, so that every publish
  // from now on bumps the futex word (until Return). True when bytes are
  // unread already.
  bool LeaveToWatcher();
  // The reader is back: publishes need not bump the word.
  void Return();
  // Whether the producer published bytes not yet consumed.
  bool Unread() const;
  // The futex word now. Read it, check Unread, then WaitForPublishAfter:
  // a publish after the read wakes the wait (while the reader is away).
  uint32_t PublishSeq() const;
  // Sleeps until the word is no longer `seq`, or `deadline`.
  void WaitForPublishAfter(uint32_t seq, absl::Time deadline) const;
  // Ends every WaitForPublishAfter now.
  void WakeWatchers() const;

  // OK, or the error that made this consumer unusable.
  const absl::Status& status() const { return status_; }

  // How long the next wait spins before it sleeps (for tests and diagnostics).
  int64_t spin_budget_ns() const { return spin_.ns(); }

 private:
  // The producer's head, read once and validated; fails the consumer if bad.
  absl::StatusOr<uint64_t> LoadHead();
  absl::StatusOr<bool> HasData();
  absl::Status Fail(absl::Status status);

  Header* header_ = nullptr;
  const unsigned char* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t max_message_ = 0;
  // The only trusted copy of tail: shared memory gets it, never gives it.
  uint64_t tail_ = 0;
  // The last validated head: a new one must lie between it and tail_ + capacity.
  uint64_t seen_head_ = 0;
  int peer_doorbell_ = -1;
  SpinBudget spin_;
  // When ArmWakeup declared this side asleep (Disarm learns how long it slept).
  std::optional<std::chrono::steady_clock::time_point> armed_at_;
  absl::Status status_;
  // Heap-held so that the side stays movable.
  std::unique_ptr<std::atomic<bool>> interrupted_ = std::make_unique<std::atomic<bool>>(false);
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_MESSAGE_RING_H_
