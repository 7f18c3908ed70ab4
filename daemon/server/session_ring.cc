#include "daemon/server/session_ring.h"

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
  absl::StatusOr<std::unique_ptr<MappedClientMemory>> mapped = MappedClientMemory::Map(memory, size);
  if (!mapped.ok()) return mapped.status();
  return std::shared_ptr<SessionRing>(
      new SessionRing(*std::move(mapped), std::move(memory.doorbell)));
}

SessionRing::SessionRing(std::unique_ptr<MappedClientMemory> memory, UniqueFd doorbell)
    : memory_(std::move(memory)),
      doorbell_(std::move(doorbell)),
      channel_(memory_->base(), RingChannel::Side::kDaemon) {}

SessionRing::~SessionRing() = default;

absl::Status SessionRing::GivenUp() const {
  if (!memory_->given_up()) return absl::OkStatus();
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
