// A session opened by hand with a shared-memory channel as libascendcl would
// set it up (proto/acl/ring_channel.h), so that a test can then speak on it
// — or break it.
#ifndef ACLD_TESTS_RING_SESSION_H_
#define ACLD_TESTS_RING_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/acl/message_ring.h"
#include "proto/acl/protocol.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld_test {

class RingSession {
 public:
  // `region_bytes`: the memfd's size (RegionBytes() unless testing a wrong
  // one); `protocol`: 3 hands a doorbell over with the channel, 2 does not.
  explicit RingSession(const std::string& socket,
                       size_t region_bytes = acld::RingChannel::RegionBytes(),
                       uint32_t protocol = acld::kProtocolVersion);
  ~RingSession();  // cancels the stream
  RingSession(const RingSession&) = delete;
  RingSession& operator=(const RingSession&) = delete;

  bool opened() const { return opened_; }
  bool on_ring() const { return on_ring_; }

  // Sends `bytes` as one message on the channel (waiting at most 5 s for room).
  bool SendBytes(const std::string& bytes);
  bool Send(const acl::v1::ClientMessage& message) { return SendBytes(message.SerializeAsString()); }
  // The next message from acld within `timeout`; nullopt if none came.
  std::optional<acl::v1::ServerMessage> Next(absl::Duration timeout);

  // An InitCount call over the channel; its reply's init count, or -1.
  int64_t InitCountOverRing();

  // Sends `count` InitCount calls and reads no reply (at most 5 s): acld's
  // replies fill the daemon-to-client ring, then its writes wait for room.
  int Flood(int count);

  // Sends `frames` full fragments of a message and never its last one, as a
  // hostile client could (waiting at most 5 s for room); how many went.
  // Instead of Send and the calls above: a session uses one or the other.
  int SendUnfinished(int frames);

  // Writes an impossible head into the client-to-daemon ring, as a hostile
  // client could at any moment, and rings the daemon.
  void BreakRing();

 private:
  size_t size_;
  void* base_ = nullptr;
  int doorbell_ = -1;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>>
      stream_;
  std::unique_ptr<acld::RingChannel> ring_;
  std::unique_ptr<acld::MessageRing::Producer> raw_;  // SendUnfinished's
  bool opened_ = false;
  bool on_ring_ = false;
};

}  // namespace acld_test

#endif  // ACLD_TESTS_RING_SESSION_H_
