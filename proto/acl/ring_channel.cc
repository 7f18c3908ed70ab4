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

RingChannel::RingChannel(void* region, Side side)
    : out_(side == Side::kClient ? ClientToDaemon(region) : DaemonToClient(region),
           kRingCapacity, kMaxFrameBytes),
      in_(side == Side::kClient ? DaemonToClient(region) : ClientToDaemon(region), kRingCapacity,
          kMaxFrameBytes) {}

absl::Status RingChannel::Send(absl::string_view message, const StopFn& stop) {
  constexpr size_t kChunk = kMaxFrameBytes - 1;  // one byte marks the fragment
  std::string frame;
  frame.reserve(std::min(message.size(), kChunk) + 1);
  size_t offset = 0;
  do {
    const size_t chunk = std::min(kChunk, message.size() - offset);
    const bool last = offset + chunk == message.size();
    frame.assign(1, static_cast<char>(last ? kLastFragment : kMoreFragments));
    frame.append(message.data() + offset, chunk);
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

absl::StatusOr<std::optional<std::string>> RingChannel::Receive(const StopFn& stop) {
  std::string message;
  while (true) {
    absl::StatusOr<std::optional<std::string>> frame = in_.TryRead();
    if (!frame.ok()) return frame.status();
    if (!frame->has_value()) {
      if (stop()) return std::nullopt;
      const absl::Status waited = in_.WaitForData(absl::Now() + kWaitSlice);
      if (!waited.ok()) return waited;
      continue;
    }
    std::string& bytes = **frame;
    if (bytes.empty() || (bytes[0] != kLastFragment && bytes[0] != kMoreFragments)) {
      return absl::DataLossError("a ring frame without its fragment marker");
    }
    const bool last = bytes[0] == kLastFragment;
    if (message.size() + bytes.size() - 1 > static_cast<size_t>(kMaxMessageBytes)) {
      return absl::DataLossError(absl::StrCat("a message on the ring is larger than ",
                                              kMaxMessageBytes, " bytes"));
    }
    if (last && message.empty()) {
      bytes.erase(0, 1);
      return std::move(bytes);
    }
    message.append(bytes, 1, std::string::npos);
    if (last) return message;
  }
}

}  // namespace acld
