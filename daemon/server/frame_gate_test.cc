#include "daemon/server/frame_gate.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

std::string Frame(uint8_t type, uint32_t stream, const std::string& payload, uint8_t flags = 0) {
  std::string frame;
  frame.push_back(static_cast<char>(payload.size() >> 16));
  frame.push_back(static_cast<char>(payload.size() >> 8));
  frame.push_back(static_cast<char>(payload.size()));
  frame.push_back(static_cast<char>(type));
  frame.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(stream >> shift));
  return frame + payload;
}
std::string Headers(uint32_t stream) { return Frame(0x1, stream, "hdrs"); }
std::string Data(uint32_t stream, const std::string& bytes) { return Frame(0x0, stream, bytes); }
std::string Reset(uint32_t stream) { return Frame(0x3, stream, std::string("\0\0\0\x8", 4)); }
// A gRPC message's prefix: not compressed, `length` bytes follow.
std::string Prefix(uint32_t length) {
  return std::string(1, '\0') + static_cast<char>(length >> 24) + static_cast<char>(length >> 16) +
         static_cast<char>(length >> 8) + static_cast<char>(length);
}

// Whether `done` holds within 10 s (it is asked every 5 ms).
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 2000; ++i) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

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
    const Connection first = Connect(1000);
    client_ = first.client;
    served_ = first.served;
    ASSERT_GE(served_, 0);
  }
  void TearDown() override {
    if (client_ >= 0) close(client_);
    if (served_ >= 0) close(served_);
  }
  void Send(const std::string& bytes) { WriteAll(client_, bytes); }
  // A new connection of `uid` through the gate, come in through `socket`:
  // the client's end and the end gRPC would serve (-1 when none could be made).
  struct Connection {
    int client = -1;
    int served = -1;
  };
  Connection Connect(uid_t uid, const void* socket = nullptr) {
    int pair[2], ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return {};
    if (!FrameGate::MakeEnds(ends)) {
      close(pair[0]);
      close(pair[1]);
      return {};
    }
    return {pair[0], gate_->Interpose(pair[1], uid, socket, ends)};
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
  EXPECT_TRUE(Eventually([&] { return gate_->connections() == 0; })) << gate_->connections();
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

  const auto [client, served] = Connect(1000);
  ASSERT_GE(served, 0);
  const std::string request = std::string(kPreface) + Headers(1) + Data(1, std::string(300000, 'q'));
  WriteAll(client, request);
  close(client);
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
  EXPECT_TRUE(Eventually([&] { return gate_->connections() == 0; })) << gate_->connections();
}

// Connections that come and go at once (before the gate's thread has
// watched them) are let go, all of them.
TEST_F(FrameGateTest, ConnectionsThatEndAtOnceAreLetGo) {
  Open({});
  for (int i = 0; i < 200; ++i) {
    const auto [client, served] = Connect(1000 + i);
    ASSERT_GE(served, 0);
    (void)!write(client, kPreface, 5);
    close(client);
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
  EXPECT_TRUE(Eventually([&] { return gate_->connections() == 0; })) << gate_->connections();
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

// gRPC checks a request's length only once all of it arrived; the gate
// closes the connection as soon as the prefix announces more than acld takes.
TEST_F(FrameGateTest, ARequestLongerThanAcldTakesClosesItsConnection) {
  FrameGate::Options options;
  options.max_request_bytes = 1000;
  Open(options);
  const std::string allowed = std::string(kPreface) + Headers(1) + Data(1, Prefix(1000) + "ok");
  EXPECT_EQ((Send(allowed), ReadFor(served_, allowed.size(), absl::Seconds(10))), allowed);
  Send(Data(1, std::string(998, 'k') + Prefix(1001) + "never"));
  bool ended = false;
  const std::string got = ReadFor(served_, 2000, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended) << "gRPC's end stays open";
  EXPECT_EQ(got.find("never"), std::string::npos) << "the long request reached gRPC";
  EXPECT_EQ(gate_->connections_cut(), 1u);
  EXPECT_TRUE(gate_->ArrivingBytes().empty());
}

// A uid's requests still arriving hold at most max_arriving_bytes_per_uid
// together: the one that would pass it waits (its prefix held back) until
// the uid's others have arrived; another uid's go on meanwhile.
TEST_F(FrameGateTest, AUidsRequestsArrivingTogetherAreBounded) {
  FrameGate::Options options;
  options.max_arriving_bytes_per_uid = FrameGate::ChargeOf(800) + FrameGate::ChargeOf(300) - 1;
  Open(options);
  const std::string first = std::string(kPreface) + Headers(1) + Data(1, Prefix(800) + "part");
  Send(first);
  EXPECT_EQ(ReadFor(served_, first.size(), absl::Seconds(10)), first);
  EXPECT_TRUE(Eventually([&] { return gate_->ArrivingBytes() == std::map<uid_t, uint64_t>{{1000, FrameGate::ChargeOf(800)}};
  }));

  const auto [same_uid, served_same] = Connect(1000);
  const auto [other_uid, served_other] = Connect(2000);
  // The same uid through another socket (a quota group's: a pod's processes
  // may run as any uid) has a bound of its own.
  const int group_socket = 0;
  const auto [other_socket, served_other_socket] = Connect(1000, &group_socket);
  ASSERT_GE(served_same, 0);
  ASSERT_GE(served_other, 0);
  ASSERT_GE(served_other_socket, 0);
  const std::string request = std::string(kPreface) + Headers(1) + Data(1, Prefix(300) + std::string(300, 's'));
  WriteAll(same_uid, request);
  WriteAll(other_uid, request);
  WriteAll(other_socket, request);
  EXPECT_EQ(ReadFor(served_other, request.size(), absl::Seconds(10)), request);
  EXPECT_EQ(ReadFor(served_other_socket, request.size(), absl::Seconds(10)), request);
  const size_t held_at = request.size() - 300 - 1;  // the prefix's last byte and on
  EXPECT_EQ(ReadFor(served_same, request.size(), absl::Milliseconds(300)), request.substr(0, held_at));
  EXPECT_EQ(gate_->requests_delayed(), 1u);

  const std::string rest = Data(1, std::string(796, 'p'));  // the first request arrives in full
  Send(rest);
  EXPECT_EQ(ReadFor(served_, rest.size(), absl::Seconds(10)), rest);
  EXPECT_EQ(ReadFor(served_same, request.size() - held_at, absl::Seconds(10)), request.substr(held_at));
  EXPECT_TRUE(Eventually([&] { return gate_->ArrivingBytes().empty(); }));
  for (int fd : {same_uid, other_uid, other_socket, served_same, served_other, served_other_socket}) {
    close(fd);
  }
}

// What a request was counted goes back when its stream ends before it
// arrived in full: the client resets it, gRPC ends it, or the connection
// closes. Padding and prefixes split between frames are read as such.
TEST_F(FrameGateTest, ARequestEndsWithItsStream) {
  Open({});
  const auto arriving = [&] {
    const std::map<uid_t, uint64_t> bytes = gate_->ArrivingBytes();
    return bytes.empty() ? uint64_t{0} : bytes.at(1000);
  };
  const std::string padded = Frame(0x0, 1, std::string(1, '\3') + Prefix(500).substr(0, 2) + "pad", 0x8);
  Send(std::string(kPreface) + Headers(1) + padded + Data(1, Prefix(500).substr(2) + "x"));
  EXPECT_TRUE(Eventually([&] { return arriving() == FrameGate::ChargeOf(500); })) << arriving();
  Send(Reset(1));
  EXPECT_TRUE(Eventually([&] { return arriving() == 0; })) << arriving();

  Send(Headers(3) + Data(3, Prefix(700)));
  EXPECT_TRUE(Eventually([&] { return arriving() == FrameGate::ChargeOf(700); })) << arriving();
  WriteAll(served_, Frame(0x1, 3, "status", 0x1 | 0x4));  // gRPC's trailers end the stream
  EXPECT_TRUE(Eventually([&] { return arriving() == 0; })) << arriving();

  Send(Headers(5) + Frame(0x0, 5, Prefix(900) + "y"));
  Send(Headers(7) + Data(7, Prefix(50)));
  EXPECT_TRUE(Eventually([&] {
    return arriving() == FrameGate::ChargeOf(900) + FrameGate::ChargeOf(50);
  })) << arriving();
  Send(Frame(0x0, 7, std::string(50, 'z'), 0x1));  // arrived, and the stream's end
  EXPECT_TRUE(Eventually([&] { return arriving() == FrameGate::ChargeOf(900); })) << arriving();
  close(client_);
  client_ = -1;
  EXPECT_TRUE(Eventually([&] { return arriving() == 0; })) << arriving();
}

// A connection waiting for room for its request is let go as soon as what
// it waited on ends: gRPC ended the stream (the client may then open
// another), or the client hung up.
TEST_F(FrameGateTest, AWaitEndsWithWhatItWaitedOn) {
  FrameGate::Options options;
  options.max_arriving_bytes_per_uid = FrameGate::ChargeOf(900) + FrameGate::ChargeOf(500) - 1;
  Open(options);
  const std::string first = std::string(kPreface) + Headers(1) + Data(1, Prefix(900));
  Send(first);
  EXPECT_EQ(ReadFor(served_, first.size(), absl::Seconds(10)), first);
  const auto [waiter, served_waiter] = Connect(1000);
  ASSERT_GE(served_waiter, 0);
  const std::string request = std::string(kPreface) + Headers(1) + Data(1, Prefix(500) + "w");
  WriteAll(waiter, request);
  const size_t held_at = request.size() - 2;
  EXPECT_EQ(ReadFor(served_waiter, request.size(), absl::Milliseconds(300)), request.substr(0, held_at));
  WriteAll(served_waiter, Frame(0x1, 1, "status", 0x1 | 0x4));  // gRPC ends the stream
  const std::string next = Headers(3) + Data(3, Prefix(0));
  WriteAll(waiter, next);
  EXPECT_EQ(ReadFor(served_waiter, request.size() - held_at + next.size(), absl::Seconds(10)),
            request.substr(held_at) + next);

  const auto [gone, served_gone] = Connect(1000);
  ASSERT_GE(served_gone, 0);
  WriteAll(gone, request);
  EXPECT_EQ(ReadFor(served_gone, request.size(), absl::Milliseconds(300)), request.substr(0, held_at));
  EXPECT_EQ(gate_->connections(), 3u);
  close(gone);
  bool ended = false;
  ReadFor(served_gone, 1, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended) << "the gate kept the connection of a client that hung up";
  EXPECT_TRUE(Eventually([&] { return gate_->connections() == 2; }));
  EXPECT_EQ(gate_->ArrivingBytes(), (std::map<uid_t, uint64_t>{{1000, FrameGate::ChargeOf(900)}}));
  for (int fd : {waiter, served_waiter, served_gone}) close(fd);
}

// No client of acld starts a request while its own is still arriving; one
// that does when its uid has no room would wait for itself: it is closed.
TEST_F(FrameGateTest, AConnectionWaitingForItsOwnRequestIsClosed) {
  FrameGate::Options options;
  options.max_arriving_bytes_per_uid = FrameGate::ChargeOf(900) + FrameGate::ChargeOf(500) - 1;
  Open(options);
  Send(std::string(kPreface) + Headers(1) + Data(1, Prefix(900) + "part") + Headers(3) +
       Data(3, Prefix(500)));
  bool ended = false;
  ReadFor(client_, 1, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended);
  EXPECT_EQ(gate_->connections_cut(), 1u);
  EXPECT_TRUE(Eventually([&] { return gate_->ArrivingBytes().empty(); }));
}

// gRPC can keep all it read while a request arrives, not only the request's
// bytes: a connection sending more than its request's charge before the
// request arrived (here in frames gRPC ignores) is closed; one sending its
// request in ordinary frames is not.
TEST_F(FrameGateTest, AConnectionSendingMoreThanItsRequestIsClosed) {
  FrameGate::Options options;
  options.max_arriving_bytes_per_uid = 1 << 20;
  Open(options);
  const std::string request = std::string(kPreface) + Headers(1) + Data(1, Prefix(100000));
  std::string frames = request;
  for (size_t sent = 0; sent < 100000; sent += 16384) {
    frames += Data(1, std::string(std::min<size_t>(16384, 100000 - sent), 'd'));
  }
  Send(frames);
  EXPECT_EQ(ReadFor(served_, frames.size(), absl::Seconds(10)).size(), frames.size());
  EXPECT_TRUE(Eventually([&] { return gate_->ArrivingBytes().empty(); }));
  EXPECT_EQ(gate_->connections_cut(), 0u);

  // Two requests arriving at once (streams 3 and 5): once the large one
  // arrived, what it sent is not held against the small one's charge.
  std::string both = Headers(3) + Data(3, Prefix(100000)) + Headers(5) + Data(5, Prefix(10) + "s");
  for (size_t sent = 0; sent < 100000; sent += 16384) {
    both += Data(3, std::string(std::min<size_t>(16384, 100000 - sent), 'd'));
  }
  both += Data(5, std::string(9, 's'));
  Send(both);
  EXPECT_EQ(ReadFor(served_, both.size(), absl::Seconds(10)).size(), both.size());
  EXPECT_TRUE(Eventually([&] { return gate_->ArrivingBytes().empty(); }));
  EXPECT_EQ(gate_->connections_cut(), 0u);

  Send(Data(1, Prefix(100)));
  std::string junk;
  for (int i = 0; i < 8; ++i) junk += Frame(0xff, 0, std::string(16384, 'j'));  // gRPC ignores these
  Send(junk);
  bool ended = false;
  ReadFor(client_, 1, absl::Seconds(10), &ended);
  EXPECT_TRUE(ended) << "the connection stays open";
  EXPECT_EQ(gate_->connections_cut(), 1u);
}

}  // namespace
}  // namespace acld::server
