#include "daemon/server/session_ring.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace acld::server {

absl::StatusOr<std::shared_ptr<SessionRing>> SessionRing::Map(ReceivedMemory memory) {
  const size_t size = RingChannel::RegionBytes();
  if (memory.size != size) {
    return absl::InvalidArgumentError(absl::StrCat("a session channel is ", size,
                                                   " bytes; the memory handed over has ",
                                                   memory.size));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd.get(), 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map the session channel: ", std::strerror(errno)));
  }
  (void)madvise(base, size, MADV_DONTDUMP);  // a client's bytes have no place in acld's core dumps
  return std::shared_ptr<SessionRing>(new SessionRing(base, size));
}

SessionRing::SessionRing(void* base, size_t size)
    : base_(base), size_(size), channel_(base, RingChannel::Side::kDaemon) {}

SessionRing::~SessionRing() { munmap(base_, size_); }

absl::StatusOr<std::optional<acl::v1::ClientMessage>> SessionRing::Read(
    const std::function<bool()>& gone) {
  absl::StatusOr<std::optional<std::string>> bytes =
      channel_.Receive([&] { return stopped_.load() || gone(); });
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::nullopt;
  acl::v1::ClientMessage message;
  if (!message.ParseFromString(**bytes)) {
    return absl::DataLossError("a message on the session channel does not parse");
  }
  return message;
}

bool SessionRing::Write(const acl::v1::ServerMessage& message,
                        const std::function<bool()>& gone) {
  if (stopped_.load()) return false;
  const std::string bytes = message.SerializeAsString();
  if (channel_.Send(bytes, [&] { return stopped_.load() || gone(); }).ok()) return true;
  // Stopped, or the client broke its end of the channel: either way its
  // session is over, and its read loop ends too.
  Stop();
  return false;
}

void SessionRing::Stop() {
  stopped_.store(true);
  channel_.Interrupt();
}

}  // namespace acld::server
