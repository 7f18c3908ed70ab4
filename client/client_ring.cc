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
  absl::StatusOr<std::unique_ptr<ClientRing>> ring = handover(base, fd, size, doorbell);
  close(fd);  // acld holds its own reference; the mapping keeps ours
  if (!ring.ok()) {
    close(doorbell);
    munmap(base, size);
    // A refusal keeps its own words (the daemon's code and reason).
    if (absl::IsFailedPrecondition(ring.status())) return ring.status();
    return failed(ring.status().message());
  }
  return ring;
}

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::Create(const std::string& peer_socket,
                                                               absl::Duration timeout) {
  return Make([&](void* base, int fd, size_t size,
                  int doorbell) -> absl::StatusOr<std::unique_ptr<ClientRing>> {
    absl::StatusOr<std::string> ticket =
        SendSharedMemory(peer_socket, fd, size, timeout, doorbell);
    if (!ticket.ok()) return ticket.status();
    return std::unique_ptr<ClientRing>(new ClientRing(base, doorbell, *std::move(ticket)));
  });
}

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::OpenSession(
    const std::string& peer_socket, absl::Duration timeout) {
  return Make([&](void* base, int fd, size_t size,
                  int doorbell) -> absl::StatusOr<std::unique_ptr<ClientRing>> {
    absl::StatusOr<int> connection =
        OpenSessionOnIdentitySocket(peer_socket, fd, size, doorbell, timeout);
    if (!connection.ok()) return connection.status();
    return std::unique_ptr<ClientRing>(new ClientRing(base, doorbell, "", *connection));
  });
}

ClientRing::ClientRing(void* base, int doorbell, std::string ticket, int connection)
    : base_(base),
      doorbell_(doorbell),
      ticket_(std::move(ticket)),
      channel_(base, acld::RingChannel::Side::kClient, doorbell),
      connection_(connection) {}

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
