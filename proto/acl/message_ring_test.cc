#include "proto/acl/message_ring.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace acld {
namespace {

using Header = MessageRing::Header;

// A region on the heap, aligned as the ring requires (as a mapping would be).
class HeapRegion {
 public:
  explicit HeapRegion(size_t capacity)
      : bytes_(MessageRing::RegionBytes(capacity)),
        region_(::operator new(bytes_, std::align_val_t{MessageRing::kCacheLineBytes})) {
    std::memset(region_, 0, bytes_);
  }
  ~HeapRegion() { ::operator delete(region_, std::align_val_t{MessageRing::kCacheLineBytes}); }
  HeapRegion(const HeapRegion&) = delete;
  HeapRegion& operator=(const HeapRegion&) = delete;

  void* get() const { return region_; }
  Header* header() const { return MessageRing::HeaderOf(region_); }
  unsigned char* data() const { return static_cast<unsigned char*>(region_) + sizeof(Header); }

 private:
  size_t bytes_;
  void* region_;
};

// A MAP_SHARED anonymous mapping: what a forked child shares with its parent.
class SharedRegion {
 public:
  explicit SharedRegion(size_t capacity) : bytes_(MessageRing::RegionBytes(capacity)) {
    void* mapped =
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    region_ = mapped == MAP_FAILED ? nullptr : mapped;
  }
  ~SharedRegion() {
    if (region_ != nullptr) munmap(region_, bytes_);
  }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  void* get() const { return region_; }

 private:
  size_t bytes_;
  void* region_;
};

// Message `index`: its size varies from 0 to max_message, its bytes depend on
// the index, so a lost, repeated or reordered message shows.
std::string MakeMessage(uint64_t index, size_t max_message) {
  std::string message((index * 7919) % (max_message + 1), '\0');
  for (size_t i = 0; i < message.size(); ++i) {
    message[i] = static_cast<char>((index * 131 + i * 31) & 0xff);
  }
  return message;
}

// FNV-1a over the messages' sizes and bytes, in order.
uint64_t Mix(uint64_t hash, const std::string& message) {
  auto byte = [&hash](unsigned char value) { hash = (hash ^ value) * 1099511628211u; };
  for (int i = 0; i < 4; ++i) byte(static_cast<unsigned char>(message.size() >> (8 * i)));
  for (char c : message) byte(static_cast<unsigned char>(c));
  return hash;
}
constexpr uint64_t kMixSeed = 14695981039346656037u;

// Writes a little-endian length into the data area, as a hostile producer would.
void PokeLength(unsigned char* data, size_t capacity, uint64_t index, uint32_t length) {
  for (uint64_t i = 0; i < 4; ++i) {
    __atomic_store_n(&data[(index + i) & (capacity - 1)],
                     static_cast<unsigned char>(length >> (8 * i)), __ATOMIC_RELAXED);
  }
}

// ------------------------------------------------------------------ basics

TEST(MessageRingTest, RoundTripKeepsOrderAndContentAcrossWraps) {
  constexpr size_t kCapacity = 4096;
  constexpr size_t kMax = 1000;
  constexpr int kMessages = 5000;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, kMax);
  MessageRing::Consumer consumer(region.get(), kCapacity, kMax);
  ASSERT_TRUE(producer.status().ok()) << producer.status();
  ASSERT_TRUE(consumer.status().ok()) << consumer.status();

  std::deque<std::string> in_flight;
  int written = 0;
  int read = 0;
  uint64_t frame_bytes = 0;
  // Each round fills the ring and drains 1 to 4 messages, so that the frames
  // land at ever different offsets; bounded in case of a bug.
  for (int round = 0; round < 100 * kMessages && read < kMessages; ++round) {
    while (written < kMessages) {
      std::string message = MakeMessage(written, kMax);
      absl::StatusOr<bool> done = producer.TryWrite(message);
      ASSERT_TRUE(done.ok()) << done.status();
      if (!*done) break;
      frame_bytes += 4 + message.size();
      in_flight.push_back(std::move(message));
      ++written;
    }
    for (int i = 0; i <= round % 4 && !in_flight.empty(); ++i) {
      absl::StatusOr<std::optional<std::string>> message = consumer.TryRead();
      ASSERT_TRUE(message.ok()) << message.status();
      ASSERT_TRUE(message->has_value()) << "message " << read << " missing";
      ASSERT_EQ(**message, in_flight.front()) << "message " << read;
      in_flight.pop_front();
      ++read;
    }
  }
  EXPECT_EQ(read, kMessages);
  EXPECT_GT(frame_bytes, 100 * kCapacity);  // wrapped around many times
  absl::StatusOr<std::optional<std::string>> empty = consumer.TryRead();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_FALSE(empty->has_value());
}

TEST(MessageRingTest, LengthFieldAndBytesWrapAroundTheEnd) {
  constexpr size_t kCapacity = 4096;
  constexpr size_t kMax = kCapacity - 4;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, kMax);
  MessageRing::Consumer consumer(region.get(), kCapacity, kMax);

  // A 4094-byte frame leaves the next length field straddling the end.
  const std::string first(kCapacity - 6, 'a');
  ASSERT_TRUE(*producer.TryWrite(first));
  EXPECT_EQ(**consumer.TryRead(), first);
  const std::string second = MakeMessage(3, 200) + "tail";
  ASSERT_TRUE(*producer.TryWrite(second));
  EXPECT_EQ(region.header()->head.load(), kCapacity - 2 + 4 + second.size());
  EXPECT_EQ(**consumer.TryRead(), second);
  // And a maximal message over the end of the data area.
  const std::string full(kMax, 'q');
  ASSERT_TRUE(*producer.TryWrite(full));
  EXPECT_EQ(**consumer.TryRead(), full);
}

TEST(MessageRingTest, EmptyMessagesAreMessages) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, 16);
  MessageRing::Consumer consumer(region.get(), kCapacity, 16);
  ASSERT_TRUE(*producer.TryWrite(""));
  absl::StatusOr<std::optional<std::string>> message = consumer.TryRead();
  ASSERT_TRUE(message.ok()) << message.status();
  ASSERT_TRUE(message->has_value());
  EXPECT_EQ(**message, "");
  EXPECT_FALSE(consumer.TryRead()->has_value());
}

TEST(MessageRingTest, AFullRingRefusesUntilReadingFreesRoom) {
  constexpr size_t kCapacity = 4096;
  constexpr size_t kMax = 100;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, kMax);
  MessageRing::Consumer consumer(region.get(), kCapacity, kMax);

  const std::string message(kMax, 'm');
  size_t accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<bool> done = producer.TryWrite(message);
    ASSERT_TRUE(done.ok()) << done.status();
    if (!*done) break;
    ++accepted;
  }
  EXPECT_EQ(accepted, kCapacity / (4 + kMax));
  EXPECT_FALSE(*producer.TryWrite(message));
  // A smaller message may still fit in what is left.
  EXPECT_TRUE(*producer.TryWrite(std::string(kCapacity - accepted * (4 + kMax) - 4, 's')));
  EXPECT_FALSE(*producer.TryWrite(""));

  EXPECT_EQ(**consumer.TryRead(), message);
  EXPECT_TRUE(*producer.TryWrite(message));
  EXPECT_FALSE(*producer.TryWrite(message));
}

TEST(MessageRingTest, AnOversizedMessageIsRefusedWithoutBreakingTheRing) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, 100);
  absl::StatusOr<bool> done = producer.TryWrite(std::string(101, 'x'));
  EXPECT_EQ(done.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(producer.status().ok());
  EXPECT_TRUE(*producer.TryWrite(std::string(100, 'x')));
}

TEST(MessageRingTest, BadArgumentsFailCleanly) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  EXPECT_FALSE(MessageRing::Format(region.get(), 1024).ok());            // too small
  EXPECT_FALSE(MessageRing::Format(region.get(), 3 * kCapacity).ok());   // not a power of two
  EXPECT_FALSE(MessageRing::Format(region.get(), size_t{2} << 30).ok()); // too large
  EXPECT_FALSE(MessageRing::Format(nullptr, kCapacity).ok());
  EXPECT_FALSE(MessageRing::Format(static_cast<char*>(region.get()) + 8, kCapacity).ok());
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());

  MessageRing::Producer producer(region.get(), kCapacity, kCapacity - 3);
  EXPECT_EQ(producer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(producer.TryWrite("x").status(), producer.status());
  EXPECT_EQ(producer.WaitForSpace(absl::InfinitePast()), producer.status());
  MessageRing::Consumer consumer(static_cast<char*>(region.get()) + 4, kCapacity, 100);
  EXPECT_EQ(consumer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(consumer.TryRead().status(), consumer.status());
  EXPECT_EQ(consumer.WaitForData(absl::InfinitePast()), consumer.status());
}

// ---------------------------------------------------------------- waiting

TEST(MessageRingTest, WaitForDataReturnsByItsDeadlineWhenNothingComes) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Consumer consumer(region.get(), kCapacity, 100);
  EXPECT_TRUE(consumer.WaitForData(absl::Now() + absl::Milliseconds(20)).ok());
  EXPECT_FALSE(consumer.TryRead()->has_value());
  EXPECT_EQ(region.header()->consumer_waiting.load(), 0u);  // the flag is cleared again
  EXPECT_TRUE(consumer.WaitForData(absl::InfinitePast()).ok());
}

// A side that sleeps and is woken soon after learns to spin through such a
// gap next time (both sides sleeping would otherwise keep both spins failing);
// a spin that fails gives the budget back, and long sleeps teach nothing.
TEST(MessageRingTest, TheSpinBudgetCoversShortSleepsAndShrinksWhenSpinsFail) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Consumer consumer(region.get(), kCapacity, 100);
  const int64_t initial = consumer.spin_budget_ns();
  // Asleep (in epoll, say) for ~20 us, then woken. A preemption can stretch
  // one try past the bound, so a few tries are allowed.
  constexpr int64_t kGapNs = 20000;
  for (int attempt = 0; attempt < 50 && consumer.spin_budget_ns() < kGapNs; ++attempt) {
    ASSERT_FALSE(*consumer.ArmWakeup());
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::nanoseconds(kGapNs)) {
    }
    consumer.Disarm();
  }
  EXPECT_GE(consumer.spin_budget_ns(), kGapNs);
  EXPECT_LE(consumer.spin_budget_ns(), SpinBudget::kMaxNs);
  // Spins that find nothing halve the budget, down to its floor.
  const int64_t learned = consumer.spin_budget_ns();
  ASSERT_FALSE(*consumer.SpinForData());
  EXPECT_LT(consumer.spin_budget_ns(), learned);
  for (int i = 0; i < 20; ++i) ASSERT_FALSE(*consumer.SpinForData());
  const int64_t floor = consumer.spin_budget_ns();
  EXPECT_LT(floor, initial);
  // A long sleep (nothing came for milliseconds) teaches nothing.
  ASSERT_FALSE(*consumer.ArmWakeup());
  absl::SleepFor(absl::Milliseconds(5));
  consumer.Disarm();
  EXPECT_EQ(consumer.spin_budget_ns(), floor);
}

// While the reader is away, a watcher on another thread sleeps on the futex
// word: every publish changes the word (and wakes it) until the reader
// returns; a publish after that does not.
TEST(MessageRingTest, AWatcherSeesEveryPublishWhileTheReaderIsAway) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, 100);
  MessageRing::Consumer consumer(region.get(), kCapacity, 100);
  EXPECT_FALSE(consumer.LeaveToWatcher());  // nothing unread yet
  const uint32_t seen = consumer.PublishSeq();
  EXPECT_FALSE(consumer.Unread());
  std::atomic<bool> woken{false};
  std::thread watcher([&] {
    // Returns on the publish (the word changes), long before the deadline.
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (consumer.PublishSeq() == seen && absl::Now() < deadline) {
      consumer.WaitForPublishAfter(seen, deadline);
    }
    woken = consumer.PublishSeq() != seen;
  });
  ASSERT_TRUE(*producer.TryWrite("first"));
  watcher.join();
  EXPECT_TRUE(woken);
  EXPECT_TRUE(consumer.Unread());
  EXPECT_NE(consumer.PublishSeq(), seen);
  // Away again with a message unread: the reader is told so.
  EXPECT_TRUE(consumer.LeaveToWatcher());
  // Back: reads, and later publishes leave the word alone.
  consumer.Return();
  EXPECT_EQ(*consumer.TryRead(), "first");
  EXPECT_FALSE(consumer.Unread());
  const uint32_t back = consumer.PublishSeq();
  ASSERT_TRUE(*producer.TryWrite("second"));
  EXPECT_EQ(consumer.PublishSeq(), back);
  EXPECT_TRUE(consumer.Unread());
  // WakeWatchers ends a wait at once whatever was published.
  std::thread waiter([&] { consumer.WaitForPublishAfter(back, absl::Now() + absl::Seconds(20)); });
  consumer.WakeWatchers();
  waiter.join();
  EXPECT_NE(consumer.PublishSeq(), back);
}

// A peer may park any number of its threads on the word a side sleeps on; a
// publish then wakes a few of them, not all (each would cost the publisher,
// acld for a hostile client, a wake-up): the rest sleep until their deadline.
TEST(MessageRingTest, APublishWakesAFewOfTheThreadsParkedOnItsWordNotAll) {
  constexpr size_t kCapacity = 4096;
  constexpr int kParked = 64;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, 100);
  std::atomic<int> returned{0};
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  std::vector<std::thread> parked;
  for (int i = 0; i < kParked; ++i) {
    parked.emplace_back([&] {
      MessageRing::Consumer consumer(region.get(), kCapacity, 100);
      consumer.WaitForData(deadline).IgnoreError();
      ++returned;
    });
  }
  // Long past their spins (at most 200 us): all of them sleep.
  absl::SleepFor(absl::Milliseconds(500));
  ASSERT_EQ(returned.load(), 0);
  ASSERT_TRUE(*producer.TryWrite("news"));
  absl::SleepFor(absl::Milliseconds(500));
  const int woken = returned.load();
  for (std::thread& thread : parked) thread.join();
  EXPECT_GE(woken, 1);
  EXPECT_LE(woken, 16) << "a publish woke every thread parked on its word";
}

TEST(MessageRingTest, WaitForSpaceReturnsByItsDeadlineWhenNothingIsRead) {
  constexpr size_t kCapacity = 4096;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  MessageRing::Producer producer(region.get(), kCapacity, kCapacity - 4);
  ASSERT_TRUE(*producer.TryWrite(std::string(kCapacity - 4, 'f')));
  ASSERT_FALSE(*producer.TryWrite(""));
  EXPECT_TRUE(producer.WaitForSpace(absl::Now() + absl::Milliseconds(20)).ok());
  EXPECT_FALSE(*producer.TryWrite(""));
  EXPECT_EQ(region.header()->producer_waiting.load(), 0u);
}

TEST(MessageRingTest, TwoThreadsPassManyMessages) {
  constexpr size_t kCapacity = 64 << 10;
  constexpr size_t kMax = 512;
  constexpr int kMessages = 200000;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  // A generous bound so that a lost wake-up or a bug ends the test, not CI.
  const absl::Time give_up = absl::Now() + absl::Seconds(120);

  std::atomic<bool> producer_done{false};
  absl::Status producer_error;
  uint64_t producer_hash = kMixSeed;
  std::thread producer_thread([&] {
    MessageRing::Producer producer(region.get(), kCapacity, kMax);
    for (int i = 0; i < kMessages && producer_error.ok(); ++i) {
      const std::string message = MakeMessage(i, kMax);
      for (;;) {
        absl::StatusOr<bool> done = producer.TryWrite(message);
        if (!done.ok()) {
          producer_error = done.status();
          break;
        }
        if (*done) break;
        if (absl::Now() > give_up) {
          producer_error = absl::DeadlineExceededError("producer gave up");
          break;
        }
        absl::Status waited = producer.WaitForSpace(absl::Now() + absl::Milliseconds(100));
        if (!waited.ok()) {
          producer_error = waited;
          break;
        }
      }
      producer_hash = Mix(producer_hash, message);
    }
    producer_done.store(true);
  });

  MessageRing::Consumer consumer(region.get(), kCapacity, kMax);
  uint64_t consumer_hash = kMixSeed;
  int received = 0;
  int mismatches = 0;
  absl::Status consumer_error;
  while (received < kMessages && absl::Now() < give_up) {
    // Read before the ring: if the producer was done then, an empty ring
    // means nothing more will come (it stopped early on an error).
    const bool producer_finished = producer_done.load();
    absl::StatusOr<std::optional<std::string>> message = consumer.TryRead();
    if (!message.ok()) {
      consumer_error = message.status();
      break;
    }
    if (!message->has_value()) {
      if (producer_finished) break;
      consumer_error = consumer.WaitForData(absl::Now() + absl::Milliseconds(100));
      if (!consumer_error.ok()) break;
      continue;
    }
    if (**message != MakeMessage(received, kMax)) ++mismatches;
    consumer_hash = Mix(consumer_hash, **message);
    ++received;
  }
  producer_thread.join();
  EXPECT_TRUE(producer_error.ok()) << producer_error;
  EXPECT_TRUE(consumer_error.ok()) << consumer_error;
  EXPECT_EQ(received, kMessages);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(consumer_hash, producer_hash);
}

// The child's half of the cross-process test: produces `count` messages and
// exits 0, or exits with a code that says what went wrong. No gtest here: its
// assertions would be reported by the child's copy of the test runner.
int ProduceInChild(void* region, size_t capacity, size_t max_message, int count) {
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  MessageRing::Producer producer(region, capacity, max_message);
  for (int i = 0; i < count; ++i) {
    const std::string message = MakeMessage(i, max_message);
    for (;;) {
      absl::StatusOr<bool> done = producer.TryWrite(message);
      if (!done.ok()) return 2;
      if (*done) break;
      if (absl::Now() > give_up) return 3;
      if (!producer.WaitForSpace(absl::Now() + absl::Milliseconds(100)).ok()) return 4;
    }
  }
  return 0;
}

TEST(MessageRingTest, PassesMessagesBetweenProcesses) {
  constexpr size_t kCapacity = 16 << 10;
  constexpr size_t kMax = 700;
  constexpr int kMessages = 50000;
  SharedRegion region(kCapacity);
  ASSERT_NE(region.get(), nullptr);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());

  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) _exit(ProduceInChild(region.get(), kCapacity, kMax, kMessages));

  MessageRing::Consumer consumer(region.get(), kCapacity, kMax);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  int received = 0;
  int mismatches = 0;
  absl::Status error;
  while (received < kMessages && absl::Now() < give_up) {
    absl::StatusOr<std::optional<std::string>> message = consumer.TryRead();
    if (!message.ok()) {
      error = message.status();
      break;
    }
    if (!message->has_value()) {
      error = consumer.WaitForData(absl::Now() + absl::Milliseconds(100));
      if (!error.ok()) break;
      continue;
    }
    if (**message != MakeMessage(received, kMax)) ++mismatches;
    ++received;
  }
  if (received < kMessages) kill(child, SIGKILL);  // do not wait for a stuck child
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  EXPECT_TRUE(error.ok()) << error;
  EXPECT_EQ(received, kMessages);
  EXPECT_EQ(mismatches, 0);
  ASSERT_TRUE(WIFEXITED(wait_status)) << "child status " << wait_status;
  EXPECT_EQ(WEXITSTATUS(wait_status), 0);
}

// ------------------------------------------------------------ hostile peer

// Checks that `consumer` failed with DataLoss mentioning `what`, and keeps
// failing the same way from every call.
void ExpectConsumerFailed(MessageRing::Consumer& consumer, const std::string& what) {
  absl::StatusOr<std::optional<std::string>> first = consumer.TryRead();
  ASSERT_FALSE(first.ok());
  EXPECT_TRUE(absl::IsDataLoss(first.status())) << first.status();
  EXPECT_NE(first.status().message().find(what), absl::string_view::npos) << first.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(consumer.TryRead().status(), first.status());
  EXPECT_EQ(consumer.WaitForData(absl::Now() + absl::Seconds(5)), first.status());
  EXPECT_EQ(consumer.status(), first.status());
}

void ExpectProducerFailed(MessageRing::Producer& producer, const std::string& what) {
  absl::StatusOr<bool> first = producer.TryWrite("x");
  ASSERT_FALSE(first.ok());
  EXPECT_TRUE(absl::IsDataLoss(first.status())) << first.status();
  EXPECT_NE(first.status().message().find(what), absl::string_view::npos) << first.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(producer.TryWrite("y").status(), first.status());
  EXPECT_EQ(producer.WaitForSpace(absl::Now() + absl::Seconds(5)), first.status());
  EXPECT_EQ(producer.status(), first.status());
}

class MessageRingHostileTest : public ::testing::Test {
 protected:
  static constexpr size_t kCapacity = 4096;
  static constexpr size_t kMax = 100;

  void SetUp() override { ASSERT_TRUE(MessageRing::Format(region_.get(), kCapacity).ok()); }

  HeapRegion region_{kCapacity};
  Header* header_ = region_.header();
  MessageRing::Producer producer_{region_.get(), kCapacity, kMax};
  MessageRing::Consumer consumer_{region_.get(), kCapacity, kMax};
};

TEST_F(MessageRingHostileTest, ConsumerRejectsAHeadBeyondTailPlusCapacity) {
  header_->head.store(kCapacity + 1);
  ExpectConsumerFailed(consumer_, "head");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsAHeadBehindTail) {
  ASSERT_TRUE(*producer_.TryWrite("one"));
  ASSERT_TRUE(*producer_.TryWrite("two"));
  ASSERT_TRUE(consumer_.TryRead().ok());
  ASSERT_TRUE(consumer_.TryRead().ok());
  header_->head.store(header_->tail.load() - 1);
  ExpectConsumerFailed(consumer_, "is behind tail");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsAHeadBehindZero) {
  header_->head.store(std::numeric_limits<uint64_t>::max());
  ExpectConsumerFailed(consumer_, "is behind tail");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsAHeadThatMovesBack) {
  ASSERT_TRUE(*producer_.TryWrite(std::string(kMax, 'a')));
  ASSERT_TRUE(*producer_.TryWrite(std::string(kMax, 'b')));
  ASSERT_TRUE(consumer_.TryRead().ok());  // has seen head at 208, tail is 104
  header_->head.store(150);
  ExpectConsumerFailed(consumer_, "moved back");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsALengthAboveMaxMessage) {
  PokeLength(region_.data(), kCapacity, 0, kMax + 1);
  header_->head.store(4 + kMax + 1);
  ExpectConsumerFailed(consumer_, "exceeds the limit");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsAHugeLength) {
  PokeLength(region_.data(), kCapacity, 0, 0xffffffffu);
  header_->head.store(kCapacity);
  ExpectConsumerFailed(consumer_, "exceeds the limit");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsALengthBeyondWhatWasPublished) {
  PokeLength(region_.data(), kCapacity, 0, 50);
  header_->head.store(4 + 20);
  ExpectConsumerFailed(consumer_, "runs past");
}

TEST_F(MessageRingHostileTest, ConsumerRejectsAPartialLengthField) {
  header_->head.store(2);
  ExpectConsumerFailed(consumer_, "length field");
}

TEST_F(MessageRingHostileTest, ProducerRejectsATailAheadOfHead) {
  ASSERT_TRUE(*producer_.TryWrite("one"));
  header_->tail.store(header_->head.load() + 1);
  ExpectProducerFailed(producer_, "is ahead of head");
}

TEST_F(MessageRingHostileTest, ProducerRejectsATailTooFarBehind) {
  // Move head past a capacity, so that a tail of 0 is too far behind it.
  const std::string message(kMax, 'm');
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(*producer_.TryWrite(message));
    ASSERT_TRUE(consumer_.TryRead().ok());
  }
  header_->tail.store(0);
  ExpectProducerFailed(producer_, "behind it");
}

TEST_F(MessageRingHostileTest, ProducerRejectsATailFarAheadThatWrapsToLookClose) {
  // Modulo 2^64 this tail is 101 bytes behind head, but behind the tail
  // the producer saw last (0): it must not pass as a valid tail.
  ASSERT_TRUE(*producer_.TryWrite(std::string(96, 'w')));
  header_->tail.store(std::numeric_limits<uint64_t>::max());
  ExpectProducerFailed(producer_, "moved back");
}

TEST_F(MessageRingHostileTest, ProducerRejectsATailThatMovesBack) {
  ASSERT_TRUE(*producer_.TryWrite(std::string(kMax, 'a')));
  ASSERT_TRUE(*producer_.TryWrite(std::string(kMax, 'b')));
  ASSERT_TRUE(consumer_.TryRead().ok());
  ASSERT_TRUE(consumer_.TryRead().ok());
  ASSERT_TRUE(*producer_.TryWrite(std::string(kMax, 'c')));  // sees tail at 208
  header_->tail.store(104);
  ExpectProducerFailed(producer_, "moved back");
}

// A hostile peer writing random values into the header and the data while
// this side works: every call must end in a valid outcome, never a crash or
// an out-of-bounds access (the sanitizer build checks the latter).
class Scribbler {
 public:
  // Scribbles as a hostile producer (`hostile_producer`) or consumer would:
  // mostly plausible values, which get past the index checks and reach the
  // length checks and copies, and now and then anything at all.
  Scribbler(HeapRegion& region, size_t capacity, size_t max_message, bool hostile_producer)
      : thread_([this, &region, capacity, max_message, hostile_producer] {
          std::mt19937_64 random(hostile_producer ? 12345 : 54321);
          while (!stop_.load(std::memory_order_relaxed)) {
            Scribble(random, region, capacity, max_message, hostile_producer);
          }
        }) {}
  ~Scribbler() {
    stop_.store(true);
    thread_.join();
  }

 private:
  static void Scribble(std::mt19937_64& random, HeapRegion& region, size_t capacity,
                       size_t max_message, bool hostile_producer) {
    Header* header = region.header();
    const uint64_t value = random();
    const uint64_t near = random() % (capacity + 8);  // now and then too far
    switch (value % 16) {
      case 0:
        header->head.store(random(), std::memory_order_relaxed);
        break;
      case 1:
        header->tail.store(random(), std::memory_order_relaxed);
        break;
      case 2:
      case 3:
      case 4:
        // The victim's own index is published in the header: aim near it.
        if (hostile_producer) {
          header->head.store(header->tail.load() + near, std::memory_order_release);
        } else {
          header->tail.store(header->head.load() - near, std::memory_order_release);
        }
        break;
      case 5:
      case 6:
      case 7:
        PokeLength(region.data(), capacity, header->tail.load(),
                   static_cast<uint32_t>(random() % (max_message + max_message / 4 + 8)));
        break;
      case 8:
        PokeLength(region.data(), capacity, header->tail.load(), static_cast<uint32_t>(random()));
        break;
      case 9:
      case 10:
        for (int i = 0; i < 16; ++i) {
          __atomic_store_n(&region.data()[random() % capacity],
                           static_cast<unsigned char>(random()), __ATOMIC_RELAXED);
        }
        break;
      case 11:
        header->consumer_waiting.store(value >> 32 & 1);
        header->producer_waiting.store(value >> 33 & 1);
        break;
      case 12:
        header->data_seq.fetch_add(1);
        header->space_seq.fetch_add(1);
        break;
      case 13:
        header->data_seq.store(static_cast<uint32_t>(random()));
        header->space_seq.store(static_cast<uint32_t>(random()));
        break;
      default:
        std::this_thread::yield();  // calm moments, in which the victim makes progress
        break;
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(MessageRingFuzzTest, ConsumerSurvivesAScribblingProducer) {
  constexpr size_t kCapacity = 4096;
  constexpr size_t kMax = 256;
  constexpr int kIterations = 20000;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  int messages = 0;
  int empties = 0;
  int errors = 0;
  {
    Scribbler scribbler(region, kCapacity, kMax, /*hostile_producer=*/true);
    MessageRing::Consumer consumer(region.get(), kCapacity, kMax);
    for (int i = 0; i < kIterations; ++i) {
      if (i % 64 == 0) {
        const absl::Status waited = consumer.WaitForData(absl::Now() + absl::Microseconds(50));
        EXPECT_TRUE(waited.ok() || absl::IsDataLoss(waited)) << waited;
      }
      absl::StatusOr<std::optional<std::string>> message = consumer.TryRead();
      if (!message.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(message.status())) << message.status();
        EXPECT_EQ(consumer.TryRead().status(), message.status());  // stays failed
        ++errors;
        // A fresh consumer, to keep exercising the checks, on a ring whose
        // indices are where Format puts them (the scribbler keeps going).
        consumer = MessageRing::Consumer(region.get(), kCapacity, kMax);
        region.header()->head.store(0);
        region.header()->tail.store(0);
      } else if (message->has_value()) {
        EXPECT_LE((*message)->size(), kMax);
        ++messages;
      } else {
        ++empties;
      }
    }
  }
  EXPECT_EQ(messages + empties + errors, kIterations);
  ::testing::Test::RecordProperty("messages", messages);
  ::testing::Test::RecordProperty("empties", empties);
  ::testing::Test::RecordProperty("errors", errors);
}

TEST(MessageRingFuzzTest, ProducerSurvivesAScribblingConsumer) {
  constexpr size_t kCapacity = 4096;
  constexpr size_t kMax = 256;
  constexpr int kIterations = 20000;
  HeapRegion region(kCapacity);
  ASSERT_TRUE(MessageRing::Format(region.get(), kCapacity).ok());
  int written = 0;
  int full = 0;
  int errors = 0;
  {
    Scribbler scribbler(region, kCapacity, kMax, /*hostile_producer=*/false);
    MessageRing::Producer producer(region.get(), kCapacity, kMax);
    for (int i = 0; i < kIterations; ++i) {
      if (i % 64 == 0) {
        const absl::Status waited = producer.WaitForSpace(absl::Now() + absl::Microseconds(50));
        EXPECT_TRUE(waited.ok() || absl::IsDataLoss(waited)) << waited;
      }
      absl::StatusOr<bool> done = producer.TryWrite(MakeMessage(i, kMax));
      if (!done.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(done.status())) << done.status();
        EXPECT_EQ(producer.TryWrite("x").status(), done.status());
        ++errors;
        producer = MessageRing::Producer(region.get(), kCapacity, kMax);
        region.header()->head.store(0);
        region.header()->tail.store(0);
      } else if (*done) {
        ++written;
      } else {
        ++full;
      }
    }
  }
  EXPECT_EQ(written + full + errors, kIterations);
  ::testing::Test::RecordProperty("written", written);
  ::testing::Test::RecordProperty("full", full);
  ::testing::Test::RecordProperty("errors", errors);
}

}  // namespace
}  // namespace acld
