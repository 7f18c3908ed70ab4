#include "daemon/server/command_reader.h"

#include <unistd.h>

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

TEST(CommandReaderTest, ReadsTheCommandLineOnItsThread) {
  CommandReader reader(nullptr, absl::Seconds(30));  // patient: a loaded machine
  const std::string command = reader.Read(getpid());
  EXPECT_NE(command.find("command_reader_test"), std::string::npos) << command;
  EXPECT_EQ(reader.Read(999999999), "");  // no such process: nothing, at once
}

// A read that does not come back (a process that makes reading its memory
// wait) costs a session's opener the patience once; meanwhile every session
// gets its process's name at once. The reader recovers when the read returns.
TEST(CommandReaderTest, AStuckReadCostsThePatienceOnceThenTheNameIsUsed) {
  absl::Notification release;
  std::atomic<int> reads{0};
  CommandReader reader(
      [&](pid_t) {
        if (reads.fetch_add(1) == 0) release.WaitForNotification();
        return std::string("full command line");
      },
      absl::Milliseconds(50));
  const std::string name = ProcessName(getpid());
  ASSERT_FALSE(name.empty());
  EXPECT_EQ(reader.Read(getpid()), name);  // after the patience
  const absl::Time start = absl::Now();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(reader.Read(getpid()), name);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "later opens waited for the stuck read";
  EXPECT_EQ(reads.load(), 1);
  release.Notify();
  std::string command;
  for (int i = 0; i < 200 && command != "full command line"; ++i) {
    command = reader.Read(getpid());
    if (command != "full command line") absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(command, "full command line");
}

}  // namespace
}  // namespace acld::server
