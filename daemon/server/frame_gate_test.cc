#include "daemon/server/frame_gate.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint8_t type, uint32_t stream, const std::string& payload) {
  std::string frame;
  frame.push_back(static_cast<char>(payload.size() >> 16));
  frame.push_back(static_cast<char>(payload.size() >> 8));
  frame.push_back(static_cast<char>(payload.size()));
  frame.push_back(static_cast<char>(type));
  frame.push_back(0);
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(stream >> shift));
  return frame + payload;
}
std::string Headers(uint32_t stream) { return Frame(0x1, stream, "hdrs"); }
std::string Data(uint32_t stream, const std::string& bytes) { return Frame(0x0, stream, bytes); }

// Reads what arrives on `fd` until `bytes` have or `timeout` passes; "" and
// `*ended` once the peer closed.
std::string ReadFor(int fd, size_t bytes, absl::Duration timeout, bool* ended = nullptr) {
  std::string got;
  const absl::Time deadline = absl::Now() + timeout;
  while (got.size() < bytes) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) {
      if (ended != nullptr) *ended = true;
      break;
    }
    got.append(chunk, static_cast<size_t>(n));
  }
  return got;
}

class FrameGateTest : public ::testing::Test {
 protected:
  void Open(FrameGate::Options options) {
    auto gate = FrameGate::Start(options);
    ASSERT_TRUE(gate.ok()) << gate.status();
    gate_ = *std::move(gate);
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    client_ = pair[0];
    served_ = Interpose(pair[1], 1000);
    ASSERT_GE(served_, 0);
  }
  void TearDown() override {
    if (client_ >= 0) close(client_);
    if (served_ >= 0) close(served_);
  }
  void Send(const std::string& bytes) { WriteAll(client_, bytes); }
  int Interpose(int client, uid_t uid) {
    int ends[2];
    if (!FrameGate::MakeEnds(ends)) return -1;
    return gate_->Interpose(client, uid, nullptr, ends);
  }
  // `fd` may be non-blocking (the gate's end is).
  static void WriteAll(int fd, const std::string& bytes) {
    size_t sent = 0;
    for (int tries = 0; sent < bytes.size() && tries < 10000; ++tries) {
      pollfd ready{fd, POLLOUT, 0};
      poll(&ready, 1, 10);
      const ssize_t n = write(fd, bytes.data() + sent, bytes.size() - sent);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    ASSERT_EQ(sent, bytes.size());
  }

  std::unique_ptr<FrameGate> gate_;
  std::vector<int> gate_served_;
  int client_ = -1;
  int served_ = -1;  // what gRPC would serve
};

TEST_F(FrameGateTest, RelaysBothWaysAndPassesOnTheEnd) {
  Open({});
  const std::string request =
      std::string(kPreface) + Headers(1) + Data(1, std::string(200000, 'r'));
  Send(request);
  EXPECT_EQ(ReadFor(served_, request.size(), absl::Seconds(10)), request);
  const std::string reply = Data(1, std::string(300000, 'a'));
  WriteAll(served_, reply);
  EXPECT_EQ(ReadFor(client_, reply.size(), absl::Seconds(10)), reply);
  EXPECT_EQ(gate_->connections(), 1u);
  // The client goes: gRPC reads the end of its connection, and the gate
  // lets the connection go once gRPC closes its end.
  close(client_);
  client_ = -1;
  bool ended = false;
  EXPECT_EQ(ReadFor(served_, 1, absl::Seconds(10), &ended), "");
  EXPECT_TRUE(ended);
  close(served_);
  served_ = -1;
  for (int i = 0; i < 1000 && gate_->connections() != 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(gate_->connections(), 0u);
}

// What gRPC sent before it closed its end reaches the client in full, then
// the end; the same the other way.
TEST_F(FrameGateTest, WhatOneSideSentBeforeClosingReachesTheOther) {
  Open({});
  const std::string reply = Data(1, std::string(300000, 'z'));
  WriteAll(served_, reply);
  close(served_);
  served_ = -1;
  bool ended = false;
  EXPECT_EQ(ReadFor(client_, reply.size(), absl::Seconds(10)), reply);
  ReadFor(client_, 1, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended);

  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const int served = Interpose(pair[1], 1000);
  ASSERT_GE(served, 0);
  const std::string request = std::string(kPreface) + Headers(1) + Data(1, std::string(300000, 'q'));
  WriteAll(pair[0], request);
  close(pair[0]);
  bool request_ended = false;
  EXPECT_EQ(ReadFor(served, request.size(), absl::Seconds(10)), request);
  ReadFor(served, 1, absl::Seconds(10), &request_ended);
  EXPECT_TRUE(request_ended);
  close(served);
}

// gRPC gone, a client that does not read what gRPC sent before is let go
// after a few seconds, not held for ever.
TEST_F(FrameGateTest, WhenGrpcEndsAClientThatDoesNotReadIsLetGo) {
  Open({});
  const std::string reply = Data(1, std::string(1 << 20, 'x'));
  size_t sent = 0;
  for (int tries = 0; sent < reply.size() && tries < 100; ++tries) {
    pollfd ready{served_, POLLOUT, 0};
    poll(&ready, 1, 10);
    const ssize_t n = write(served_, reply.data() + sent, reply.size() - sent);
    if (n > 0) sent += static_cast<size_t>(n);
  }
  close(served_);
  served_ = -1;
  for (int i = 0; i < 3000 && gate_->connections() != 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(gate_->connections(), 0u);
}

// Connections that come and go at once (before the gate's thread has
// watched them) are let go, all of them.
TEST_F(FrameGateTest, ConnectionsThatEndAtOnceAreLetGo) {
  Open({});
  for (int i = 0; i < 200; ++i) {
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    const int served = Interpose(pair[1], 1000 + i);
    ASSERT_GE(served, 0);
    (void)!write(pair[0], kPreface, 5);
    close(pair[0]);
    if (i % 2 == 0) close(served);  // gRPC gone too, or still there
    else gate_served_.push_back(served);
  }
  for (int fd : gate_served_) {
    bool ended = false;
    ReadFor(fd, 100, absl::Seconds(10), &ended);
    EXPECT_TRUE(ended);
    close(fd);
  }
  gate_served_.clear();
  close(client_);
  client_ = -1;
  close(served_);
  served_ = -1;
  for (int i = 0; i < 2000 && gate_->connections() != 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(gate_->connections(), 0u);
}

// A connection that opens more streams than any client of acld does (HTTP/2
// "rapid reset": open, reset, again) is closed once past the cap, before gRPC
// reads the stream past it.
TEST_F(FrameGateTest, AConnectionOpeningTooManyStreamsIsClosed) {
  FrameGate::Options options;
  options.max_streams_per_connection = 3;
  Open(options);
  const std::string allowed = std::string(kPreface) + Headers(1) + Headers(3) + Headers(5);
  Send(allowed + Headers(7) + Data(7, "never"));
  bool served_ended = false;
  const std::string got = ReadFor(served_, allowed.size() + 1, absl::Seconds(10), &served_ended);
  EXPECT_TRUE(served_ended) << "gRPC's end stays open";
  EXPECT_EQ(got.find("never"), std::string::npos) << "the stream past the cap reached gRPC";
  bool ended = false;
  ReadFor(client_, 1, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended) << "the client's connection stays open";
  EXPECT_EQ(gate_->connections_cut(), 1u);
}

// Streams past a uid's rate wait for it (the gate stops reading their
// connection), and go once the rate allows: never lost, never refused.
TEST_F(FrameGateTest, StreamsPastTheUidsRateWaitForIt) {
  FrameGate::Options options;
  options.streams_per_second = 5;
  options.stream_burst = 2;
  Open(options);
  const std::string first = std::string(kPreface) + Headers(1) + Headers(3);
  const std::string later = Headers(5) + Data(5, "late");
  Send(first + later);
  EXPECT_EQ(ReadFor(served_, first.size(), absl::Seconds(10)), first);
  EXPECT_EQ(ReadFor(served_, later.size(), absl::Seconds(10)), later);
  EXPECT_GE(gate_->streams_delayed(), 1u);
  EXPECT_EQ(gate_->connections_cut(), 0u);
}

}  // namespace
}  // namespace acld::server
