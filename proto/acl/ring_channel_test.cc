#include "proto/acl/ring_channel.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/eventfd.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/acl/protocol.h"

namespace acld {
namespace {

// A region as a mapping would give it: aligned, RegionBytes() long.
struct Region {
  // aligned_alloc wants a multiple of the alignment.
  static constexpr size_t kAlign = 4096;
  Region()
      : bytes(static_cast<char*>(std::aligned_alloc(
            kAlign, (RingChannel::RegionBytes() + kAlign - 1) / kAlign * kAlign))) {
    RingChannel::Format(bytes.get());
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> bytes;
};

bool Never() { return false; }

TEST(RingChannelTest, MessagesGoBothWays) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  ASSERT_TRUE(client.Send("request", Never).ok());
  ASSERT_TRUE(client.Send("", Never).ok());
  ASSERT_TRUE(daemon.Send("reply", Never).ok());
  EXPECT_EQ(*daemon.Receive(Never), std::optional<std::string>("request"));
  EXPECT_EQ(*daemon.Receive(Never), std::optional<std::string>(""));
  EXPECT_EQ(*client.Receive(Never), std::optional<std::string>("reply"));
}

TEST(RingChannelTest, AMessageLargerThanTheRingTravelsInFragments) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  std::string large(3 * RingChannel::kRingCapacity + 12345, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 131 + 7);
  std::thread sender([&] { EXPECT_TRUE(client.Send(large, Never).ok()); });
  absl::StatusOr<std::optional<std::string>> received = daemon.Receive(Never);
  sender.join();
  ASSERT_TRUE(received.ok()) << received.status();
  ASSERT_TRUE(received->has_value());
  EXPECT_EQ(**received, large);
}

TEST(RingChannelTest, AReceiverStopsOnceAskedAndDrainsFirst) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  std::atomic<bool> stop{false};
  auto stopped = [&] { return stop.load(); };
  ASSERT_TRUE(daemon.Send("last words", Never).ok());
  stop = true;
  // What was sent before the stop is still read.
  EXPECT_EQ(*client.Receive(stopped), std::optional<std::string>("last words"));
  EXPECT_EQ(*client.Receive(stopped), std::nullopt);
}

TEST(RingChannelTest, InterruptEndsAWaitingReceiveAndSend) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  std::atomic<bool> stop{false};
  auto stopped = [&] { return stop.load(); };
  std::thread receiver([&] { EXPECT_EQ(*client.Receive(stopped), std::nullopt); });
  // Fill the daemon-bound ring: the next send waits for room nobody makes.
  const std::string frame(RingChannel::kMaxFrameBytes - 1, 'x');
  std::thread sender([&] {
    absl::Status sent;
    for (int i = 0; i < 64 && sent.ok(); ++i) sent = client.Send(frame, stopped);
    EXPECT_TRUE(absl::IsCancelled(sent)) << sent;
  });
  stop = true;
  client.Interrupt();
  receiver.join();  // within a moment, not a wait slice per side
  sender.join();
}

TEST(RingChannelTest, AFrameWithoutItsMarkerIsRefused) {
  Region region;
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  // A raw producer on the client's ring, as a hostile client would write it.
  MessageRing::Producer raw(region.bytes.get(), RingChannel::kRingCapacity,
                            RingChannel::kMaxFrameBytes);
  ASSERT_TRUE(*raw.TryWrite(std::string("\x07payload", 8)));
  absl::StatusOr<std::optional<std::string>> received = daemon.Receive(Never);
  EXPECT_TRUE(absl::IsDataLoss(received.status())) << received.status();
}

// Empty (or short) fragments would never reach kMaxMessageBytes: a client
// that wrote them faster than the daemon read would keep it reading for ever.
TEST(RingChannelTest, AFragmentThatIsNotFullIsRefusedUnlessItIsTheLast) {
  for (size_t payload : {size_t{0}, size_t{1}, RingChannel::kMaxFrameBytes - 2}) {
    Region region;
    RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
    MessageRing::Producer raw(region.bytes.get(), RingChannel::kRingCapacity,
                              RingChannel::kMaxFrameBytes);
    std::string frame(payload + 1, 'f');
    frame[0] = static_cast<char>(RingChannel::kMoreFragments);
    ASSERT_TRUE(*raw.TryWrite(frame));
    absl::StatusOr<std::optional<std::string>> received = daemon.TryReceive();
    EXPECT_TRUE(absl::IsDataLoss(received.status())) << payload << ": " << received.status();
  }
}

TEST(RingChannelTest, FragmentsPastTheLargestMessageAreRefused) {
  Region region;
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  MessageRing::Producer raw(region.bytes.get(), RingChannel::kRingCapacity,
                            RingChannel::kMaxFrameBytes);
  std::string more(RingChannel::kMaxFrameBytes, 'm');
  more[0] = static_cast<char>(RingChannel::kMoreFragments);
  // A client that never sends the last fragment: the daemon gives up at
  // kMaxRequestBytes instead of buffering for ever.
  std::atomic<bool> done{false};
  std::thread hostile([&] {
    for (int i = 0; i < 4096 && !done.load(); ++i) {
      absl::StatusOr<bool> written = raw.TryWrite(more);
      if (!written.ok()) break;
      if (!*written) raw.WaitForSpace(absl::Now() + absl::Milliseconds(50)).IgnoreError();
    }
  });
  absl::StatusOr<std::optional<std::string>> received = daemon.Receive(Never);
  done = true;
  hostile.join();
  EXPECT_TRUE(absl::IsDataLoss(received.status())) << received.status();
  EXPECT_NE(received.status().message().find(std::to_string(kMaxRequestBytes)), std::string::npos);
}

// The daemon takes no request larger than a client sends (kMaxRequestBytes,
// as on the gRPC stream); a client takes replies up to kMaxMessageBytes.
TEST(RingChannelTest, EachSideTakesMessagesUpToItsOwnLimit) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  const std::string over(kMaxRequestBytes + 1, 'x');
  std::atomic<bool> stop{false};
  std::thread request([&] { client.Send(over, [&] { return stop.load(); }).IgnoreError(); });
  absl::StatusOr<std::optional<std::string>> refused = daemon.Receive(Never);
  stop = true;
  client.Interrupt();
  request.join();
  EXPECT_TRUE(absl::IsDataLoss(refused.status())) << refused.status();

  Region replies;
  RingChannel client2(replies.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon2(replies.bytes.get(), RingChannel::Side::kDaemon);
  std::thread reply([&] { EXPECT_TRUE(daemon2.Send(over, Never).ok()); });
  absl::StatusOr<std::optional<std::string>> received = client2.Receive(Never);
  reply.join();
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(received->value_or("").size(), over.size());
}

// What the receiver keeps of a message still arriving is asked for before
// it grows and given back when the message is whole; a refusal ends the
// receive with its error.
TEST(RingChannelTest, KeptFragmentsAreAskedForAndGivenBack) {
  Region region;
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  std::vector<size_t> asked;
  size_t allowed = 0;
  daemon.OnKeepingFragments([&](size_t bytes) {
    asked.push_back(bytes);
    return bytes <= allowed ? absl::OkStatus() : absl::ResourceExhaustedError("over budget");
  });
  const size_t chunk = RingChannel::kMaxFrameBytes - 1;
  // Five frames: more than the ring holds, so sent from a thread of its own.
  const std::string five_frames(5 * chunk, 'x');
  allowed = 4 * chunk;
  std::thread sender([&] { EXPECT_TRUE(client.Send(five_frames, Never).ok()); });
  absl::StatusOr<std::optional<std::string>> received = daemon.Receive(Never);
  sender.join();
  ASSERT_TRUE(received.ok()) << received.status();
  ASSERT_TRUE(received->has_value());
  EXPECT_EQ(**received, five_frames);
  // What the buffer grows to, as it grows (doubling), not only what it holds.
  EXPECT_EQ(asked, (std::vector<size_t>{chunk, 2 * chunk, 4 * chunk, 0}));

  // A single-frame message keeps nothing, so asks nothing.
  asked.clear();
  ASSERT_TRUE(client.Send("small", Never).ok());
  received = daemon.TryReceive();
  ASSERT_TRUE(received.ok() && received->has_value());
  EXPECT_TRUE(asked.empty());

  allowed = chunk;
  const std::string three_frames(3 * chunk, 'x');
  ASSERT_TRUE(client.Send(three_frames, Never).ok());
  received = daemon.TryReceive();
  EXPECT_TRUE(absl::IsResourceExhausted(received.status())) << received.status();
}

// The daemon's non-blocking side: an eventfd stands for its epoll.
struct Doorbell {
  Doorbell() : fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~Doorbell() { close(fd); }
  // How often it rang since the last look (0: never).
  uint64_t Rings() {
    uint64_t count = 0;
    return read(fd, &count, sizeof(count)) == sizeof(count) ? count : 0;
  }
  int fd;
};

TEST(RingChannelTest, TheDaemonSideReceivesWithoutBlockingAndIsRungOnlyWhileArmed) {
  Region region;
  Doorbell doorbell;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient, doorbell.fd);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  EXPECT_EQ(*daemon.TryReceive(), std::nullopt);
  ASSERT_TRUE(client.Send("not armed", Never).ok());
  EXPECT_EQ(doorbell.Rings(), 0u);
  // Arming with a message waiting says so instead of sleeping.
  EXPECT_TRUE(*daemon.ArmReceive());
  EXPECT_EQ(*daemon.TryReceive(), std::optional<std::string>("not armed"));
  EXPECT_FALSE(*daemon.ArmReceive());
  ASSERT_TRUE(client.Send("armed", Never).ok());
  EXPECT_EQ(doorbell.Rings(), 1u);
  daemon.DisarmReceive();
  ASSERT_TRUE(client.Send("disarmed", Never).ok());
  EXPECT_EQ(doorbell.Rings(), 0u);
  EXPECT_EQ(*daemon.TryReceive(), std::optional<std::string>("armed"));
  EXPECT_EQ(*daemon.TryReceive(), std::optional<std::string>("disarmed"));
}

TEST(RingChannelTest, TheSenderSeesWhenEverythingItSentWasRead) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  EXPECT_TRUE(client.SentAllRead());
  ASSERT_TRUE(client.Send("one", Never).ok());
  ASSERT_TRUE(client.Send("two", Never).ok());
  EXPECT_FALSE(client.SentAllRead());
  EXPECT_EQ(*daemon.TryReceive(), std::optional<std::string>("one"));
  EXPECT_FALSE(client.SentAllRead());
  EXPECT_EQ(*daemon.TryReceive(), std::optional<std::string>("two"));
  EXPECT_TRUE(client.SentAllRead());
}

TEST(RingChannelTest, TheDaemonSideKeepsFragmentsUntilTheLastArrives) {
  Region region;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  std::string large(2 * RingChannel::kRingCapacity + 99, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 37 + 1);
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    EXPECT_TRUE(client.Send(large, Never).ok());
    sent = true;
  });
  std::optional<std::string> received;
  // Bounded by time, not turns: under load 100,000 yields ran out before the
  // sender had sent it all.
  for (const absl::Time give_up = absl::Now() + absl::Seconds(30);
       !received.has_value() && absl::Now() < give_up;) {
    absl::StatusOr<std::optional<std::string>> next = daemon.TryReceive();
    ASSERT_TRUE(next.ok()) << next.status();
    received = *std::move(next);
    if (!received.has_value()) std::this_thread::yield();
  }
  sender.join();
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(*received, large);
  EXPECT_TRUE(sent);
}

TEST(RingChannelTest, TheDaemonSideSendsAsRoomAppearsAndIsWokenForIt) {
  Region region;
  Doorbell doorbell;
  RingChannel client(region.bytes.get(), RingChannel::Side::kClient, doorbell.fd);
  RingChannel daemon(region.bytes.get(), RingChannel::Side::kDaemon);
  std::string large(RingChannel::kRingCapacity + 777, '\0');
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 53 + 3);
  // Taken, but more than the ring holds: the rest waits, and so does the next.
  EXPECT_TRUE(*daemon.Offer(large));
  EXPECT_TRUE(daemon.sending());
  EXPECT_FALSE(*daemon.Offer("next"));
  EXPECT_FALSE(*daemon.PushPending());
  EXPECT_EQ(doorbell.Rings(), 0u);
  // The client frees room while receiving: that rings the daemon, whose
  // PushPending then sends the rest.
  std::optional<std::string> received;
  std::thread receiver([&] { received = *client.Receive(Never); });
  for (const absl::Time give_up = absl::Now() + absl::Seconds(30);
       daemon.sending() && absl::Now() < give_up;) {
    if (doorbell.Rings() > 0) {
      ASSERT_TRUE(daemon.PushPending().ok());
    }
    std::this_thread::yield();
  }
  receiver.join();
  EXPECT_FALSE(daemon.sending());
  ASSERT_TRUE(received.has_value());
  EXPECT_EQ(*received, large);
  EXPECT_TRUE(*daemon.Offer(""));
  EXPECT_EQ(*client.Receive(Never), std::optional<std::string>(""));
}

}  // namespace
}  // namespace acld
