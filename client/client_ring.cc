#include "client/client_ring.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/peer_token.h"
#include "client/sealed_memfd.h"

namespace acl_client {

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::Create(const std::string& peer_socket,
                                                               absl::Duration timeout) {
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
  absl::StatusOr<std::string> ticket =
      SendSharedMemory(peer_socket, fd, size, timeout, doorbell);
  close(fd);  // acld holds its own reference; the mapping keeps ours
  if (!ticket.ok()) {
    close(doorbell);
    munmap(base, size);
    return failed(ticket.status().message());
  }
  return std::unique_ptr<ClientRing>(new ClientRing(base, doorbell, *std::move(ticket)));
}

ClientRing::ClientRing(void* base, int doorbell, std::string ticket)
    : base_(base),
      doorbell_(doorbell),
      ticket_(std::move(ticket)),
      channel_(base, acld::RingChannel::Side::kClient, doorbell) {}

ClientRing::~ClientRing() {
  munmap(base_, acld::RingChannel::RegionBytes());
  close(doorbell_);
}

bool ClientRing::Write(const acl::v1::ClientMessage& message) {
  if (stopped_.load()) return false;
  return channel_.Send(message.SerializeAsString(), [this] { return stopped_.load(); }).ok();
}

absl::StatusOr<std::optional<acl::v1::ServerMessage>> ClientRing::Read(absl::Time deadline) {
  absl::StatusOr<std::optional<std::string>> bytes =
      channel_.Receive([this] { return stopped_.load(); }, deadline);
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

}  // namespace acl_client
