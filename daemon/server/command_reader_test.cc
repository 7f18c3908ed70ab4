#include "daemon/server/command_reader.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

const Tenant kUid(1000, nullptr);
const Tenant kOtherUid(1001, nullptr);

// What a reader gave, for a test to wait on.
class Answers {
 public:
  CommandReader::DoneFn Collect() {
    return [this](std::string command) {
      absl::MutexLock lock(&mu_);
      answers_.push_back(std::move(command));
    };
  }
  // The answers once there are `count` (bounded wait), or what came by then.
  std::vector<std::string> Await(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return answers_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30));
    return answers_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> answers_ ABSL_GUARDED_BY(mu_);
};

TEST(CommandReaderTest, ReadsTheCommandLineOnItsThread) {
  Answers answers;
  CommandReader reader;
  ASSERT_TRUE(reader.Ask(getpid(), kUid, answers.Collect()));
  ASSERT_TRUE(reader.Ask(999999999, kUid, answers.Collect()));  // no such process
  const std::vector<std::string> got = answers.Await(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find("command_reader_test"), std::string::npos) << got[0];
  EXPECT_EQ(got[1], "");
}

// A read that does not come back (a process that makes reading its memory
// wait) holds up only the asks behind it, and at most kMaxWaiting of them:
// asking never waits, and the reader answers them all once the read returns.
TEST(CommandReaderTest, AStuckReadHoldsABoundedQueueAndNeverTheAsker) {
  // Shared with the reader's thread, which may outlive the reader (its
  // destructor does not wait for a read); the answers outlive the reader.
  auto release = std::make_shared<absl::Notification>();
  auto reads = std::make_shared<std::atomic<int>>(0);
  constexpr size_t kMaxWaiting = 4;
  Answers answers;
  CommandReader reader(
      [release, reads](pid_t) {
        if (reads->fetch_add(1) == 0) release->WaitForNotification();
        return std::string("full command line");
      },
      kMaxWaiting, /*max_waiting_per_tenant=*/kMaxWaiting + 1);
  ASSERT_TRUE(reader.Ask(getpid(), kUid, answers.Collect()));
  // The reader takes the first ask off the queue before it blocks in it.
  for (int i = 0; i < 3000 && reads->load() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(reads->load(), 1);
  EXPECT_EQ(reader.unanswered(), 1u);
  const absl::Time start = absl::Now();
  for (size_t i = 0; i < kMaxWaiting; ++i) EXPECT_TRUE(reader.Ask(getpid(), kUid, answers.Collect()));
  EXPECT_FALSE(reader.Ask(getpid(), kUid, answers.Collect())) << "the queue has no bound";
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "asking waited for the stuck read";
  EXPECT_TRUE(answers.Await(0).empty());
  EXPECT_EQ(reader.unanswered(), 1 + kMaxWaiting);
  release->Notify();
  const std::vector<std::string> got = answers.Await(1 + kMaxWaiting);
  EXPECT_EQ(got, std::vector<std::string>(1 + kMaxWaiting, "full command line"));
  EXPECT_EQ(reader.unanswered(), 0u);
  EXPECT_TRUE(reader.Ask(getpid(), kUid, answers.Collect())) << "the queue did not empty";
  EXPECT_EQ(answers.Await(2 + kMaxWaiting).size(), 2 + kMaxWaiting);
}

// Destroyed while a read is stuck: the destructor does not wait for it, and
// that read's answer is never given (its `done` may use what is gone).
TEST(CommandReaderTest, NoAnswerComesAfterTheReaderIsGone) {
  auto read_started = std::make_shared<absl::Notification>();
  auto release = std::make_shared<absl::Notification>();
  auto read_returned = std::make_shared<absl::Notification>();
  auto answered = std::make_shared<std::atomic<bool>>(false);
  {
    CommandReader reader([read_started, release, read_returned](pid_t) {
      read_started->Notify();
      release->WaitForNotification();
      read_returned->Notify();
      return std::string("late");
    });
    ASSERT_TRUE(reader.Ask(getpid(), kUid, [answered](std::string) { answered->store(true); }));
    ASSERT_TRUE(read_started->WaitForNotificationWithTimeout(absl::Seconds(30)));
  }
  release->Notify();
  ASSERT_TRUE(read_returned->WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(50));  // past the moment a wrong answer would come
  EXPECT_FALSE(answered->load());
}

// One tenant's stuck read holds one reader and its own later asks; the
// other readers answer other tenants meanwhile.
TEST(CommandReaderTest, AnotherTenantsReadsGoOnWhileOneTenantsReadIsStuck) {
  auto release = std::make_shared<absl::Notification>();
  auto stuck = std::make_shared<absl::Notification>();
  Answers theirs;
  Answers others;
  CommandReader reader([release, stuck](pid_t pid) {
    if (pid == 1) {
      stuck->Notify();
      release->WaitForNotification();
    }
    return std::string("pid ") + std::to_string(pid);
  });
  ASSERT_TRUE(reader.Ask(1, kUid, theirs.Collect()));
  ASSERT_TRUE(stuck->WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(reader.Ask(2, kUid, theirs.Collect()));
  for (pid_t pid = 3; pid < 3 + 10; ++pid) ASSERT_TRUE(reader.Ask(pid, kOtherUid, others.Collect()));
  EXPECT_EQ(others.Await(10).size(), 10u);
  EXPECT_TRUE(theirs.Await(0).empty()) << "a tenant's second read ran beside its stuck first";
  EXPECT_EQ(reader.unanswered(), 2u);
  release->Notify();
  EXPECT_EQ(theirs.Await(2), (std::vector<std::string>{"pid 1", "pid 2"}));
}

// One tenant's asks are bounded on their own: past kMaxWaitingPerTenant it
// is refused, and another tenant is not (a quota group is one tenant,
// whatever its processes' uids).
TEST(CommandReaderTest, OneTenantCannotFillTheQueue) {
  auto release = std::make_shared<absl::Notification>();
  auto started = std::make_shared<std::atomic<int>>(0);
  Answers answers;
  constexpr size_t kPerUid = 3;
  {
    CommandReader reader(
        [release, started](pid_t) {
          started->fetch_add(1);
          release->WaitForNotification();
          return std::string("read");
        },
        /*max_waiting=*/100, kPerUid, /*readers=*/1);
    ASSERT_TRUE(reader.Ask(1, kUid, answers.Collect()));
    for (int i = 0; i < 3000 && started->load() == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
    ASSERT_EQ(started->load(), 1);  // the reader holds the first ask, off the queue
    for (size_t i = 0; i < kPerUid; ++i) EXPECT_TRUE(reader.Ask(2, kUid, answers.Collect()));
    EXPECT_FALSE(reader.Ask(2, kUid, answers.Collect())) << "one tenant's asks have no bound";
    EXPECT_TRUE(reader.Ask(3, kOtherUid, answers.Collect()));
    EXPECT_EQ(reader.unanswered(), 1 + kPerUid + 1);
  }
  release->Notify();  // the reader's thread ends with its read
}

}  // namespace
}  // namespace acld::server
