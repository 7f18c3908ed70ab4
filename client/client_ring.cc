#include "client/client_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/peer_token.h"

namespace acl_client {

absl::StatusOr<std::unique_ptr<ClientRing>> ClientRing::Create(const std::string& peer_socket,
                                                               absl::Duration timeout) {
  const size_t size = acld::RingChannel::RegionBytes();
  auto failed = [](absl::string_view why) {
    return absl::UnavailableError(absl::StrCat("cannot set up the session channel: ", why));
  };
  const int fd = memfd_create("acld-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return failed(absl::StrCat("memfd_create: ", std::strerror(errno)));
  // Sealed to its size: acld maps it, and no later change may make that
  // mapping fault.
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return failed(error);
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string error = std::strerror(errno);
    close(fd);
    return failed(error);
  }
  (void)madvise(base, size, MADV_DONTFORK);
  acld::RingChannel::Format(base);
  absl::StatusOr<std::string> ticket = SendSharedMemory(peer_socket, fd, size, timeout);
  close(fd);  // acld holds its own reference; the mapping keeps ours
  if (!ticket.ok()) {
    munmap(base, size);
    return failed(ticket.status().message());
  }
  return std::unique_ptr<ClientRing>(new ClientRing(base, *std::move(ticket)));
}

ClientRing::ClientRing(void* base, std::string ticket)
    : base_(base),
      ticket_(std::move(ticket)),
      channel_(base, acld::RingChannel::Side::kClient) {}

ClientRing::~ClientRing() { munmap(base_, acld::RingChannel::RegionBytes()); }

bool ClientRing::Write(const acl::v1::ClientMessage& message) {
  if (stopped_.load()) return false;
  return channel_.Send(message.SerializeAsString(), [this] { return stopped_.load(); }).ok();
}

absl::StatusOr<std::optional<acl::v1::ServerMessage>> ClientRing::Read() {
  absl::StatusOr<std::optional<std::string>> bytes =
      channel_.Receive([this] { return stopped_.load(); });
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
