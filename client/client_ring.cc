#include "client/client_ring.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/peer_token.h"
#include "client/sealed_memfd.h"
#include "proto/acl/status_macros.h"

namespace acl_client {

template <typename Handover>
absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::Make(Handover handover) {
  const size_t size = acld::RingChannel::RegionBytes();
  auto failed = [](absl::string_view why) {
    return absl::UnavailableError(absl::StrCat("cannot set up the session channel: ", why));
  };
  absl::StatusOr<SealedMemfd> memory = CreateSealedMemfd("acld-channel", size);
  if (!memory.ok()) return failed(memory.status().message());
  const int fd = memory->fd;
  void* base = memory->base;
  (void)madvise(base, size, MADV_DONTFORK);
  acld::RingChannel::Format(base);
  const int doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (doorbell < 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    munmap(base, size);
    return failed(absl::StrCat("eventfd: ", error));
  }
  std::unique_ptr<ClientRing> ring(new ClientRing(base, doorbell));
  absl::Status handed = handover(*ring, fd, size);
  close(fd);  // acld holds its own reference; the mapping keeps ours
  if (!handed.ok()) {
    // A refusal keeps its own words (the daemon's code and reason).
    if (absl::IsFailedPrecondition(handed)) return handed;
    return failed(handed.message());
  }
  return ring;
}

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::Create(const std::string& peer_socket,
                                                               absl::Duration timeout) {
  return Make([&](ClientRing& ring, int fd, size_t size) -> absl::Status {
    ACL_ASSIGN_OR_RETURN(ring.ticket_,
                         SendSharedMemory(peer_socket, fd, size, timeout, ring.doorbell_));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::OpenSession(
    const std::string& peer_socket, absl::Duration timeout, const std::vector<std::string>& early) {
  return Make([&](ClientRing& ring, int fd, size_t size) -> absl::Status {
    // Nobody reads the channel yet, so nothing may wait for room: a message
    // that does not fit now fails (before acld has any part of it).
    for (const std::string& message : early) {
      ACL_RETURN_IF_ERROR(ring.channel_.Send(message, [] { return true; }));
    }
    ACL_ASSIGN_OR_RETURN(const int connection, OpenSessionOnIdentitySocket(
                                                   peer_socket, fd, size, ring.doorbell_, timeout));
    ring.connection_.store(connection);
    return absl::OkStatus();
  });
}

ClientRing::ClientRing(void* base, int doorbell)
    : base_(base),
      doorbell_(doorbell),
      channel_(base, acld::RingChannel::Side::kClient, doorbell),
      connection_(-1) {}

ClientRing::~ClientRing() {
  const int connection = connection_.exchange(-1);
  if (connection >= 0) close(connection);  // ends the session, if still open
  munmap(base_, acld::RingChannel::RegionBytes());
  close(doorbell_);
}

bool ClientRing::ShouldStop() {
  if (stopped_.load()) return true;
  const int connection = connection_.load(std::memory_order_relaxed);
  if (connection < 0) return false;
  // A look at the connection costs a system call: waits take one now and
  // then, never one per message.
  const int64_t now = absl::GetCurrentTimeNanos();
  int64_t due = next_connection_check_ns_.load(std::memory_order_relaxed);
  if (now < due || !next_connection_check_ns_.compare_exchange_strong(
                       due, now + absl::ToInt64Nanoseconds(kConnectionCheck))) {
    return false;
  }
  char byte;
  const ssize_t n = recv(connection, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  // acld closed it (the session is over, or acld is gone): what it sent
  // before is in the channel, and is drained before the end.
  Stop();
  return true;
}

bool ClientRing::Write(const acl::v1::ClientMessage& message) {
  if (stopped_.load()) return false;
  return channel_.Send(message.SerializeAsString(), [this] { return ShouldStop(); }).ok();
}

absl::StatusOr<std::optional<acl::v1::ServerMessage>> ClientRing::Read(absl::Time deadline) {
  absl::StatusOr<std::optional<std::string>> bytes =
      channel_.Receive([this] { return ShouldStop(); }, deadline);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::nullopt;
  acl::v1::ServerMessage message;
  if (!message.ParseFromString(**bytes)) {
    return absl::DataLossError("a message from acld on the session channel does not parse");
  }
  return message;
}

void ClientRing::Stop() {
  stopped_.store(true);
  channel_.Interrupt();
}

void ClientRing::Hangup() {
  Stop();
  // Shut down, not closed: the descriptor stays this object's until it goes.
  const int connection = connection_.load();
  if (connection >= 0) shutdown(connection, SHUT_RDWR);
}

void ClientRing::ForkedChild() {
  const int connection = connection_.exchange(-1);
  if (connection >= 0) close(connection);
}

}  // namespace acl_client
