// Work on a client's memory that the client can make wait (sealing its memfd
// against hole punching, SealAgainstHoles; filling its holes from the
// client's own mapping, client_page_filler.h), without letting the client
// hold the thread that asks.
//
// Sealing and looking for holes take the file's inode lock, which its sender
// can hold for as long as it likes: a write() into the memfd from a page of
// the sender's own FUSE mount, whose server never answers, holds it while
// the kernel waits for that page. The desk's thread, a channel pool thread or
// a gRPC thread that sealed such a file waited with it, and every user with
// them. So the sealing runs on a thread of its own and the caller waits for
// it kSealWait at most. Memory not sealed by then is refused, and so is all
// of that sender's memory until that sealing ends and for kSealCooldown
// after: the shared threads wait kSealWait at most per cooldown per sender.
// A sender has at most kMaxSealingsPerSender runs (threads) under way.
// Filling a hole reads the sender's memory through /proc/<pid>/mem, which
// waits for the sender's memory map lock, which the sender can hold as long
// (an mlock() of a mapping of its FUSE mount): it runs the same way, and
// counts the same.
#ifndef ACLD_DAEMON_SERVER_MEMORY_SEALER_H_
#define ACLD_DAEMON_SERVER_MEMORY_SEALER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace acld::server {

// How long a caller waits for the sealing: sealing a memfd nobody holds
// takes microseconds (and a few milliseconds to look through gigabytes), so
// this leaves a busy host's scheduling plenty of room.
inline constexpr absl::Duration kSealWait = absl::Milliseconds(250);
// How long a sender's memory stays refused after a sealing its caller
// stopped waiting for ended.
inline constexpr absl::Duration kSealCooldown = absl::Seconds(30);
// Sealings of one sender under way at once: about one per shared thread
// that may ask (the desk's, the pool's, gRPC's).
inline constexpr int kMaxSealingsPerSender = 8;
// A run that ends in time but takes kSlowRun or more counts its time; a
// sender whose such runs add up to more than kSlowBudget within
// kSealCooldown is refused as after a late one (a 2 MiB fill takes about a
// millisecond; a sealing microseconds). A refused older client's memory is
// given up at its next fill, and its session ends (client_page_filler.h).
inline constexpr absl::Duration kSlowRun = absl::Milliseconds(2);
inline constexpr absl::Duration kSlowBudget = absl::Seconds(1);

// Runs `work` for memory `sender` (ReceivedMemory::sender) handed over on a
// thread of its own, and returns its status if it ends within `wait`;
// Unavailable otherwise, or when the sender is refused (above).
absl::Status RunForSender(const std::string& sender, std::function<absl::Status()> work,
                          absl::Duration wait = kSealWait);

// What runs for senders now, for aclctl's status: runs under way (each on a
// thread of its own), of which late (nobody waits for them: the sender
// holds them), and senders refused now (after a late run, or slow ones).
struct MemoryWorkCounts {
  uint32_t running = 0;
  uint32_t late = 0;
  uint32_t refused_senders = 0;
};
MemoryWorkCounts CountMemoryWork();

// SealAgainstHoles(fd, size) that way.
absl::Status SealClientMemory(int fd, uint64_t size, const std::string& sender,
                              absl::Duration wait = kSealWait);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_MEMORY_SEALER_H_
