#include "tests/ring_session.h"

#include <fcntl.h>
#include <algorithm>
#include <memory>
#include <string>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/acl/message_ring.h"
#include "tests/raw_session.h"

namespace acld_test {

using acld::RingChannel;

RingSession::RingSession(const std::string& socket, size_t region_bytes, uint32_t protocol)
    : size_(region_bytes) {
  const int fd = memfd_create("test-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size_)), 0);
  EXPECT_TRUE(WriteEveryPage(fd, size_));
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);  // as libascendcl
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_NE(base_, MAP_FAILED);
  if (size_ >= RingChannel::RegionBytes()) RingChannel::Format(base_);
  doorbell_ = protocol >= 3 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
  const std::string ticket =
      AskDesk(socket + ".peer", absl::StrCat("M ", size_, "\n"), fd, doorbell_);
  close(fd);
  // A connection of its own (acld serves one session per connection; gRPC
  // would otherwise share one between the sessions of this process).
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  channel_ = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(),
                                       arguments);
  stub_ = acl::v1::Runtime::NewStub(channel_);
  stream_ = stub_->Session(&context_);
  acl::v1::ClientMessage hello;
  hello.set_call_id(1);
  hello.mutable_hello()->set_protocol_version(protocol);
  hello.mutable_hello()->set_peer_token(FetchToken(socket + ".peer"));
  hello.mutable_hello()->set_ring_ticket(ticket);
  EXPECT_TRUE(stream_->Write(hello));
  acl::v1::ServerMessage opened;
  EXPECT_TRUE(stream_->Read(&opened));
  opened_ = opened.reply().has_session_opened();
  on_ring_ = opened.reply().session_opened().ring();
  if (on_ring_) {
    ring_ = std::make_unique<RingChannel>(base_, RingChannel::Side::kClient, doorbell_);
  }
}

RingSession::~RingSession() {
  context_.TryCancel();
  (void)stream_->Finish();
  munmap(base_, size_);
  if (doorbell_ >= 0) close(doorbell_);
}

bool RingSession::SendBytes(const std::string& bytes) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  return ring_->Send(bytes, [deadline] { return absl::Now() > deadline; }).ok();
}

std::optional<acl::v1::ServerMessage> RingSession::Next(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<std::optional<std::string>> bytes =
      ring_->Receive([deadline] { return absl::Now() > deadline; });
  if (!bytes.ok() || !bytes->has_value()) return std::nullopt;
  acl::v1::ServerMessage message;
  if (!message.ParseFromString(**bytes)) return std::nullopt;
  return message;
}

int64_t RingSession::InitCountOverRing() {
  acl::v1::ClientMessage request;
  request.set_call_id(2);
  request.mutable_init_count();
  if (!Send(request)) return -1;
  // Bounded: a daemon that never answers fails the test instead of hanging it.
  std::optional<acl::v1::ServerMessage> reply = Next(absl::Seconds(20));
  if (!reply.has_value() || reply->call_id() != 2) return -1;
  return static_cast<int64_t>(reply->reply().init_count().count());
}

int RingSession::Flood(int count) {
  acl::v1::ClientMessage request;
  request.mutable_init_count();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int sent = 0;
  while (sent < count) {
    request.set_call_id(1000 + sent);  // a call with an id is answered
    if (!ring_->Send(request.SerializeAsString(), [deadline] { return absl::Now() > deadline; })
             .ok()) {
      break;
    }
    ++sent;
  }
  return sent;
}

int RingSession::SendUnfinished(int frames) {
  if (raw_ == nullptr) {
    // The client-to-daemon ring comes first in the region.
    raw_ = std::make_unique<acld::MessageRing::Producer>(base_, RingChannel::kRingCapacity,
                                                         RingChannel::kMaxFrameBytes);
    raw_->SetPeerDoorbell(doorbell_);
  }
  std::string frame(RingChannel::kMaxFrameBytes, 'u');
  frame[0] = static_cast<char>(RingChannel::kMoreFragments);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int sent = 0;
  while (sent < frames && absl::Now() < deadline) {
    absl::StatusOr<bool> written = raw_->TryWrite(frame);
    if (!written.ok()) break;
    if (*written) {
      ++sent;
    } else if (!raw_->WaitForSpace(std::min(deadline, absl::Now() + absl::Milliseconds(50))).ok()) {
      break;
    }
  }
  return sent;
}

void RingSession::BreakRing() {
  acld::MessageRing::HeaderOf(base_)->head.store(uint64_t{1} << 40);
  const uint64_t one = 1;
  EXPECT_EQ(write(doorbell_, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
}

}  // namespace acld_test
