// Seals a client's memfd against hole punching (SealAgainstHoles) without
// letting the client hold the thread that asks.
//
// Sealing and looking for holes take the file's inode lock, which its sender
// can hold for as long as it likes: a write() into the memfd from a page of
// the sender's own FUSE mount, whose server never answers, holds it while
// the kernel waits for that page. The desk's thread, a channel pool thread or
// a gRPC thread that sealed such a file waited with it, and every user with
// them. So the sealing runs on a thread of its own, and the caller waits for
// it a moment at most: a sender whose memory could not be sealed in that
// moment is refused, and its memory is refused at once while that thread
// still waits and for a while after, so that it cannot make the shared
// threads wait a moment at a time, over and over. At most one such thread
// waits per sender.
#ifndef ACLD_DAEMON_SERVER_MEMORY_SEALER_H_
#define ACLD_DAEMON_SERVER_MEMORY_SEALER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace acld::server {

// How long a caller waits for the sealing; sealing a memfd nobody holds
// takes microseconds.
inline constexpr absl::Duration kSealWait = absl::Milliseconds(100);
// How long a sender's memory is refused after its sealing did not finish in
// time (counted from when it finished, or from now while it still waits).
inline constexpr absl::Duration kSealCooldown = absl::Seconds(30);

// SealAgainstHoles(fd, size) for memory `sender` (ReceivedMemory::sender)
// handed over, waiting at most `wait` for it.
absl::Status SealClientMemory(int fd, uint64_t size, const std::string& sender,
                              absl::Duration wait = kSealWait);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_MEMORY_SEALER_H_
