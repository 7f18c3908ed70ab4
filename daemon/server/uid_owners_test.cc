#include "daemon/server/uid_owners.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

std::optional<uint32_t> Users(const std::string& name) {
  static const std::map<std::string, uint32_t> users = {{"alice", 1000}, {"bob", 1001}};
  auto it = users.find(name);
  if (it == users.end()) return std::nullopt;
  return it->second;
}

TEST(UidOwnersTest, AUidInARangeCountsAsItsOwnerAndEveryOtherAsItself) {
  const UidOwners owners = UidOwners::Parse("alice:100000:65536\n1001:165536:10\n", Users);
  EXPECT_EQ(owners.ranges(), 2u);
  EXPECT_EQ(owners.skipped(), 0u);
  EXPECT_EQ(owners.CountedAs(99999), 99999u);
  EXPECT_EQ(owners.CountedAs(100000), 1000u);
  EXPECT_EQ(owners.CountedAs(165535), 1000u);
  EXPECT_EQ(owners.CountedAs(165536), 1001u);  // a number is a uid
  EXPECT_EQ(owners.CountedAs(165545), 1001u);
  EXPECT_EQ(owners.CountedAs(165546), 165546u);
  EXPECT_EQ(owners.CountedAs(1000), 1000u);
  EXPECT_EQ(owners.CountedAs(0), 0u);
  EXPECT_EQ(owners.CountedAs(4294967295u), 4294967295u);
  EXPECT_EQ(UidOwners().CountedAs(100000), 100000u);
}

TEST(UidOwnersTest, LinesThatDoNotParseAreSkippedNotGuessed) {
  const UidOwners owners = UidOwners::Parse(
      "# comment\n\n"
      "carol:200000:100\n"          // unknown user
      "alice:300000\n"              // two fields
      "alice:300000:0\n"            // empty range
      "alice:300000:x\n"            // not a number
      "alice:-5:10\n"               // negative
      "alice:300000:10:extra\n"     // four fields
      ":300000:10\n"                // no owner
      "alice:4294967290:4294967295\n"  // runs past the last uid: kept, bounded
      "bob:400000:10\n",
      Users);
  EXPECT_EQ(owners.skipped(), 7u);
  EXPECT_EQ(owners.ranges(), 2u);
  EXPECT_EQ(owners.CountedAs(200050), 200050u);
  EXPECT_EQ(owners.CountedAs(300005), 300005u);
  EXPECT_EQ(owners.CountedAs(400009), 1001u);
  EXPECT_EQ(owners.CountedAs(4294967295u), 1000u);
  EXPECT_EQ(owners.CountedAs(4294967289u), 4294967289u);
}

// Root's and services' ranges are pools they carve up among tenants of
// their own (LXD's containers, a kubelet's pods): no one counts as them.
TEST(UidOwnersTest, RangesOfRootAndServicesCountNoOneAsTheirOwner) {
  const UidOwners owners = UidOwners::Parse(
      "root:100000:10\n0:200000:10\n999:300000:10\nalice:400000:10\n",
      [](const std::string& name) -> std::optional<uint32_t> {
        return name == "root" ? 0 : name == "alice" ? std::optional<uint32_t>(1000) : std::nullopt;
      });
  EXPECT_EQ(owners.ranges(), 1u);
  EXPECT_EQ(owners.skipped(), 3u);
  EXPECT_EQ(owners.CountedAs(100005), 100005u);
  EXPECT_EQ(owners.CountedAs(200005), 200005u);
  EXPECT_EQ(owners.CountedAs(300005), 300005u);
  EXPECT_EQ(owners.CountedAs(400005), 1000u);
  // Where the system's users start elsewhere (UID_MIN), so do owners.
  EXPECT_EQ(UidOwners::Parse("999:300000:10\n", Users, /*first_user_uid=*/500).CountedAs(300005),
            999u);
}

TEST(UidOwnersTest, ARangeOverlappingAnEarlierOneIsSkipped) {
  const UidOwners owners =
      UidOwners::Parse("bob:100050:100\nalice:100000:100\nbob:100099:1\nbob:100100:1\n", Users);
  EXPECT_EQ(owners.ranges(), 2u);
  EXPECT_EQ(owners.skipped(), 2u);
  EXPECT_EQ(owners.CountedAs(100060), 1000u);  // alice's, which starts first
  EXPECT_EQ(owners.CountedAs(100100), 1001u);
  EXPECT_EQ(owners.CountedAs(100149), 100149u);
}

class UidOwnersFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/uid_owners_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/subuid";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
    UidOwners::SetHost(nullptr);
  }
  void Write(const std::string& text, mode_t mode = 0644) {
    std::ofstream(path_, std::ios::trunc) << text;
    chmod(path_.c_str(), mode);
  }
  std::string dir_, path_;
};

TEST_F(UidOwnersFileTest, TheHostTableFollowsTheFileAndKeepsItsLastGoodRead) {
  if (geteuid() != 0) GTEST_SKIP() << "the file must be root's";
  UidOwnersFile file(path_);
  EXPECT_FALSE(file.Refresh()) << "no file: nothing to read";
  EXPECT_EQ(UidOwners::HostCountedAs(100005), 100005u);

  Write("60000:100000:10\n");
  EXPECT_TRUE(file.Refresh());
  EXPECT_EQ(UidOwners::HostCountedAs(100005), 60000u);
  EXPECT_FALSE(file.Refresh()) << "unchanged: not read again";
  EXPECT_TRUE(file.Refresh(/*force=*/true)) << "SIGHUP reads it whatever";

  Write("60000:100000:10\n60001:200000:10\n", 0666);  // writable by anyone: not trusted
  EXPECT_FALSE(file.Refresh());
  EXPECT_EQ(UidOwners::HostCountedAs(200005), 200005u);
  EXPECT_EQ(UidOwners::HostCountedAs(100005), 60000u) << "the last good read still holds";

  chmod(path_.c_str(), 0644);
  EXPECT_TRUE(file.Refresh());
  EXPECT_EQ(UidOwners::HostCountedAs(200005), 60001u);

  std::remove(path_.c_str());
  EXPECT_TRUE(file.Refresh()) << "gone: no ranges";
  EXPECT_EQ(UidOwners::HostCountedAs(200005), 200005u);
}

// A read that hangs (the user database does not answer) holds only the
// watcher's thread: asking for another read returns at once, and the reads
// go on once it answers, forced when asked, periodic otherwise.
TEST(UidOwnersWatcherTest, AHungReadHoldsOnlyTheWatchersThread) {
  absl::Notification answer;
  std::atomic<int> reads{0}, forced_reads{0};
  {
    UidOwnersWatcher watcher(
        [&](bool force) {
          if (reads.fetch_add(1) == 0) answer.WaitForNotification();
          if (force) forced_reads.fetch_add(1);
        },
        absl::Milliseconds(20));
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (reads.load() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
    ASSERT_EQ(reads.load(), 1) << "the first periodic read";
    const absl::Time asked = absl::Now();
    watcher.ReadNow();
    watcher.ReadNow();
    EXPECT_LT(absl::Now() - asked, absl::Milliseconds(100)) << "ReadNow waited for the read";
    EXPECT_EQ(reads.load(), 1);
    answer.Notify();
    while (forced_reads.load() == 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_EQ(forced_reads.load(), 1) << "the asked-for read, once for both asks";
    while (reads.load() < 4 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
    EXPECT_GE(reads.load(), 4) << "periodic reads go on";
  }
  const int after = reads.load();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(reads.load(), after) << "stopped with the watcher";
}

}  // namespace
}  // namespace acld::server
