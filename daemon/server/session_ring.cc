#include "daemon/server/session_ring.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/server/client_memory.h"
#include "daemon/server/message_shape.h"

namespace acld::server {

absl::StatusOr<std::shared_ptr<SessionRing>> SessionRing::Map(ReceivedMemory memory) {
  const size_t size = RingChannel::RegionBytes();
  if (memory.size != size) {
    return absl::InvalidArgumentError(absl::StrCat("a session channel is ", size,
                                                   " bytes; the memory handed over has ",
                                                   memory.size));
  }
  if (!memory.doorbell.valid()) {
    return absl::InvalidArgumentError(
        "a session channel comes with its doorbell (an eventfd); this one came without");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd.get(), 0);
  if (base == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map the session channel: ", std::strerror(errno)));
  }
  absl::StatusOr<std::unique_ptr<FilledFromClient>> filled =
      PrepareClientMemory(memory, base, size);
  if (!filled.ok()) {
    munmap(base, size);
    return filled.status();
  }
  (void)madvise(base, size, MADV_DONTDUMP);  // a client's bytes have no place in acld's core dumps
  (void)madvise(base, size, MADV_NOHUGEPAGE);  // nor a huge page acld's cgroup would pay for
  return std::shared_ptr<SessionRing>(
      new SessionRing(base, size, std::move(memory.doorbell), *std::move(filled)));
}

SessionRing::SessionRing(void* base, size_t size, UniqueFd doorbell,
                         std::unique_ptr<FilledFromClient> filled)
    : base_(base),
      size_(size),
      doorbell_(std::move(doorbell)),
      filled_(std::move(filled)),
      channel_(base, RingChannel::Side::kDaemon) {}

SessionRing::~SessionRing() {
  filled_.reset();
  munmap(base_, size_);
}

absl::Status SessionRing::GivenUp() const {
  if (filled_ == nullptr || !filled_->given_up()) return absl::OkStatus();
  return absl::DataLossError(
      "acld gave up filling the holes of the session channel (the client no longer maps it, or "
      "keeps punching holes in it)");
}

void SessionRing::ChargeFragmentsTo(std::unique_ptr<MessageBudget::Hold> hold) {
  fragments_ = std::move(hold);
  channel_.OnKeepingFragments(
      [hold = fragments_.get()](size_t bytes) { return hold->Resize(bytes); });
}

absl::StatusOr<const acl::v1::ClientMessage*> SessionRing::TryRead(
    google::protobuf::Arena& arena) {
  if (absl::Status given_up = GivenUp(); !given_up.ok()) return given_up;
  absl::StatusOr<std::optional<std::string>> bytes = channel_.TryReceive();
  // Given up while it was read: what came may be part zeros, never handled.
  if (absl::Status given_up = GivenUp(); !given_up.ok()) return given_up;
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return nullptr;
  auto* message = google::protobuf::Arena::CreateMessage<acl::v1::ClientMessage>(&arena);
  const absl::Status parsed = ParseClientBytes(**bytes, *message);
  if (!parsed.ok()) {
    return absl::DataLossError(
        absl::StrCat("a message on the session channel is refused: ", parsed.message()));
  }
  return message;
}

void SessionRing::Broke(const absl::Status& status) {
  broken_ = true;
  sending_.store(false);
  if (on_broken_) on_broken_(status);
}

bool SessionRing::Push() {
  if (broken_) return true;  // takes (and drops) whatever comes
  const bool was_sending = sending_.load();
  absl::StatusOr<bool> done = channel_.PushPending();
  if (!done.ok()) {
    Broke(done.status());
    return true;
  }
  sending_.store(!*done);
  if (*done && was_sending && on_drained_) on_drained_();
  return *done;
}

void SessionRing::Take(const acl::v1::ServerMessage& message) {
  if (broken_) return;
  if (absl::Status given_up = GivenUp(); !given_up.ok()) {
    Broke(given_up);
    return;
  }
  absl::StatusOr<bool> taken = channel_.Offer(message.SerializeAsString());
  if (!taken.ok()) {
    Broke(taken.status());
    return;
  }
  sending_.store(channel_.sending());
}

}  // namespace acld::server
