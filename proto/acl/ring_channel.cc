#include "proto/acl/ring_channel.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/acl/protocol.h"

namespace acld {
namespace {

// The client's ring comes first in the region, the daemon's second.
void* ClientToDaemon(void* region) { return region; }
void* DaemonToClient(void* region) {
  return static_cast<char*>(region) + MessageRing::RegionBytes(RingChannel::kRingCapacity);
}

}  // namespace

size_t RingChannel::RegionBytes() { return 2 * MessageRing::RegionBytes(kRingCapacity); }

void RingChannel::Format(void* region) {
  // Cannot fail: the capacity is valid and a mapping is page-aligned.
  MessageRing::Format(ClientToDaemon(region), kRingCapacity).IgnoreError();
  MessageRing::Format(DaemonToClient(region), kRingCapacity).IgnoreError();
}

void RingChannel::Interrupt() {
  out_.Interrupt();
  in_.Interrupt();
}

RingChannel::RingChannel(void* region, Side side, int daemon_doorbell)
    : out_(side == Side::kClient ? ClientToDaemon(region) : DaemonToClient(region),
           kRingCapacity, kMaxFrameBytes),
      in_(side == Side::kClient ? DaemonToClient(region) : ClientToDaemon(region), kRingCapacity,
          kMaxFrameBytes),
      max_in_(side == Side::kClient ? kMaxMessageBytes : kMaxRequestBytes) {
  out_.SetPeerDoorbell(daemon_doorbell);
  in_.SetPeerDoorbell(daemon_doorbell);
}

namespace {

constexpr size_t kChunk = RingChannel::kMaxFrameBytes - 1;  // one byte marks the fragment

// The frame that carries `message`'s bytes from `offset` on (as many as fit);
// returns how many it carries.
size_t NextFrame(absl::string_view message, size_t offset, std::string& frame) {
  const size_t chunk = std::min(kChunk, message.size() - offset);
  const bool last = offset + chunk == message.size();
  frame.assign(1, static_cast<char>(last ? RingChannel::kLastFragment
                                         : RingChannel::kMoreFragments));
  frame.append(message.data() + offset, chunk);
  return chunk;
}

// Adds a received frame to `message`, of at most `max_bytes`; true when that
// was its last fragment. `keep` (if set) may refuse to keep a fragment that
// is not the last.
absl::StatusOr<bool> AddFragment(std::string& frame, std::string& message, size_t max_bytes,
                                 const RingChannel::KeepFn& keep) {
  if (frame.empty() || (frame[0] != RingChannel::kLastFragment &&
                        frame[0] != RingChannel::kMoreFragments)) {
    return absl::DataLossError("a ring frame without its fragment marker");
  }
  const bool last = frame[0] == RingChannel::kLastFragment;
  // Senders fill every fragment but the last (NextFrame): short ones would
  // let a peer feed the receiver frames that never add up to the limit.
  if (!last && frame.size() - 1 != kChunk) {
    return absl::DataLossError("a ring fragment other than its message's last is not full");
  }
  const size_t needed = message.size() + frame.size() - 1;
  if (needed > max_bytes) {
    return absl::DataLossError(
        absl::StrCat("a message on the ring is larger than ", max_bytes, " bytes"));
  }
  if (!last && needed > message.capacity()) {
    // Grown here, not by append, so that what `keep` is asked for is what is
    // allocated (append would double the buffer unannounced). At least twice
    // the old capacity, which is what reserve allocates below that anyway.
    const size_t capacity = std::max(needed, 2 * message.capacity());
    if (keep) {
      const absl::Status kept = keep(capacity);
      if (!kept.ok()) return kept;
    }
    message.reserve(capacity);
  }
  if (last && message.empty()) {
    frame.erase(0, 1);
    message = std::move(frame);
  } else {
    message.append(frame, 1, std::string::npos);
  }
  return last;
}

}  // namespace

absl::Status RingChannel::Send(absl::string_view message, const StopFn& stop) {
  std::string frame;
  frame.reserve(std::min(message.size(), kChunk) + 1);
  size_t offset = 0;
  do {
    const size_t chunk = NextFrame(message, offset, frame);
    while (true) {
      absl::StatusOr<bool> written = out_.TryWrite(frame);
      if (!written.ok()) return written.status();
      if (*written) break;
      if (stop()) {
        return absl::CancelledError("the session ended before the message was sent");
      }
      const absl::Status waited = out_.WaitForSpace(absl::Now() + kWaitSlice);
      if (!waited.ok()) return waited;
    }
    offset += chunk;
  } while (offset < message.size());
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> RingChannel::Receive(const StopFn& stop,
                                                                 absl::Time deadline) {
  while (true) {
    absl::StatusOr<std::optional<std::string>> message = TryReceive();
    if (!message.ok() || message->has_value()) return message;
    // Fragments of a message that has not fully arrived stay in partial_ for
    // the next call: a receiver that gives up (its deadline) loses nothing.
    const absl::Time now = absl::Now();
    if (stop() || now >= deadline) return std::nullopt;
    const absl::Status waited = in_.WaitForData(std::min(now + kWaitSlice, deadline));
    if (!waited.ok()) return waited;
  }
}

absl::StatusOr<std::optional<std::string>> RingChannel::TryReceive() {
  while (true) {
    absl::StatusOr<std::optional<std::string>> frame = in_.TryRead();
    if (!frame.ok()) return frame.status();
    if (!frame->has_value()) return std::nullopt;
    const bool kept_fragments = !partial_.empty();
    absl::StatusOr<bool> last = AddFragment(**frame, partial_, max_in_, keep_);
    if (!last.ok()) return last.status();
    if (*last) {
      if (kept_fragments && keep_) keep_(0).IgnoreError();  // keeping less is never refused
      return std::optional<std::string>(std::exchange(partial_, std::string()));
    }
  }
}

absl::StatusOr<bool> RingChannel::ArmReceive() { return in_.ArmWakeup(); }

void RingChannel::DisarmReceive() { in_.Disarm(); }

absl::StatusOr<bool> RingChannel::SpinForFrame() { return in_.SpinForData(); }

absl::StatusOr<bool> RingChannel::Offer(std::string message) {
  if (sending()) return false;
  pending_ = std::move(message);
  pending_offset_ = 0;
  sending_ = true;
  absl::StatusOr<bool> done = PushPending();
  if (!done.ok()) return done.status();
  return true;
}

absl::StatusOr<bool> RingChannel::PushPending() {
  // Only this (sending) side sets or clears the flag: a wake-up it armed
  // cannot be cleared by someone else and lost.
  out_.Disarm();
  while (sending_) {
    const size_t chunk = NextFrame(pending_, pending_offset_, frame_);
    absl::StatusOr<bool> written = out_.TryWrite(frame_);
    if (!written.ok()) return written.status();
    if (*written) {
      pending_offset_ += chunk;
      if (pending_offset_ == pending_.size()) {
        sending_ = false;
        pending_.clear();
        pending_.shrink_to_fit();  // a large message's buffer is not kept per session
      }
      continue;
    }
    absl::StatusOr<bool> room = out_.ArmWakeup();
    if (!room.ok()) return room.status();
    if (!*room) return false;
  }
  return true;
}

}  // namespace acld
