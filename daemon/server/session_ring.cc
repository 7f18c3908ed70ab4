#include "daemon/server/session_ring.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/server/memory_sealer.h"
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
  if (absl::Status holes = SealClientMemory(memory.fd.get(), size, memory.sender); !holes.ok()) {
    munmap(base, size);
    return holes;
  }
  (void)madvise(base, size, MADV_DONTDUMP);  // a client's bytes have no place in acld's core dumps
  (void)madvise(base, size, MADV_NOHUGEPAGE);  // nor a huge page acld's cgroup would pay for
  return std::shared_ptr<SessionRing>(new SessionRing(base, size, std::move(memory.doorbell)));
}

SessionRing::SessionRing(void* base, size_t size, UniqueFd doorbell)
    : base_(base),
      size_(size),
      doorbell_(std::move(doorbell)),
      channel_(base, RingChannel::Side::kDaemon) {}

SessionRing::~SessionRing() { munmap(base_, size_); }

void SessionRing::ChargeFragmentsTo(std::unique_ptr<MessageBudget::Hold> hold) {
  fragments_ = std::move(hold);
  channel_.OnKeepingFragments(
      [hold = fragments_.get()](size_t bytes) { return hold->Resize(bytes); });
}

absl::StatusOr<const acl::v1::ClientMessage*> SessionRing::TryRead(
    google::protobuf::Arena& arena) {
  absl::StatusOr<std::optional<std::string>> bytes = channel_.TryReceive();
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
  absl::StatusOr<bool> taken = channel_.Offer(message.SerializeAsString());
  if (!taken.ok()) {
    Broke(taken.status());
    return;
  }
  sending_.store(channel_.sending());
}

}  // namespace acld::server
