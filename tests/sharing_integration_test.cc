// Memory shared across processes through acld (aclrtIpcMem*): real exporter
// and importer processes, whitelists the kernel vouches for, and what is left
// when either side ends.
#include <signal.h>
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/acld_fixture.h"
#include "tests/other_user.h"

namespace acld_test {
namespace {

constexpr char kSharing[] = "tests/sharing_client";

// The words after `prefix` on the last line starting with it.
std::vector<std::string> WordsAfter(const Process& process, const std::string& prefix) {
  const std::string& output = process.output();
  const size_t at = output.rfind(prefix);
  if (at == std::string::npos) return {};
  const std::string line = output.substr(at + prefix.size(), output.find('\n', at) - at - prefix.size());
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

// Waits (bounded) until `done` holds.
template <typename Condition>
bool Eventually(Condition done) {
  for (int tries = 0; tries < 100; ++tries) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return done();
}

class SharingTest : public ::testing::Test {
 protected:
  // Starts an exporter and returns its key.
  std::string StartExporter(Process& exporter) {
    EXPECT_TRUE(exporter.WaitForLine("key", absl::Seconds(20))) << exporter.output();
    const std::vector<std::string> words = WordsAfter(exporter, "key ");
    return words.empty() ? "" : words[0];
  }
  // Starts an importer and returns the pid it was told (aclrtDeviceGetBareTgid).
  int32_t StartImporter(Process& importer) {
    EXPECT_TRUE(importer.WaitForLine("pid", absl::Seconds(20))) << importer.output();
    int32_t pid = 0;
    const std::vector<std::string> words = WordsAfter(importer, "pid ");
    EXPECT_TRUE(!words.empty() && absl::SimpleAtoi(words[0], &pid)) << importer.output();
    return pid;
  }
  // Sends `line` and returns the words of the answer that starts with `answer`.
  std::vector<std::string> Ask(Process& process, const std::string& line, const std::string& answer) {
    process.WriteLine(line);
    EXPECT_TRUE(process.WaitForLine(answer, absl::Seconds(20))) << line << ": " << process.output();
    return WordsAfter(process, answer + " ");
  }
  // The importer's next read of what it imported fails with
  // ACL_ERROR_INVALID_PARAM, its message naming `reason`.
  void ExpectReadRefused(Process& importer, const std::string& reason) {
    const std::vector<std::string> read = Ask(importer, "read", "read");
    ASSERT_FALSE(read.empty());
    EXPECT_EQ(read[0], "100000");
    EXPECT_NE(importer.output().find(reason), std::string::npos) << importer.output();
  }
  void Finish(Process& process) {
    process.WriteLine("exit");
    EXPECT_EQ(process.Wait(absl::Seconds(20)), 0) << process.output();
    EXPECT_EQ(process.output().find("FAIL"), std::string::npos) << process.output();
  }
  // `owner`, whose memory `importer` imported, is killed while a kernel of
  // the importer runs on that memory: the kernel completes, the importer's
  // next read fails naming `reason`, and the memory goes once it exits.
  void ExpectLaunchedWorkOutlivesTheKilledOwner(Process& owner, Process& importer,
                                                const std::string& reason) {
    Ask(importer, "spin 300000", "launched");  // 0.3 s on the owner's memory
    owner.Signal(SIGKILL);
    owner.Wait(absl::Seconds(20));
    EXPECT_EQ(Ask(importer, "sync", "synced"), std::vector<std::string>{"0"})
        << "work launched before the owner died completes";
    ExpectReadRefused(importer, reason);
    Finish(importer);
    EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
  }
  // `importer` is killed: acld's sharing table forgets it.
  void KillAndExpectForgotten(Process& importer) {
    importer.Signal(SIGKILL);
    importer.Wait(absl::Seconds(20));
    EXPECT_TRUE(Eventually([&] {
      return daemon_.Aclctl({"sharing"}).second.find("session") == std::string::npos;
    })) << daemon_.Aclctl({"sharing"}).second;
  }

  AcldDaemon daemon_;
};

TEST_F(SharingTest, AWhitelistedImporterReachesTheExportUntilTheExporterCloses) {
  Process exporter({kSharing, "export", "0"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  ASSERT_EQ(key.size(), 64u);
  Process importer({kSharing, "import"}, daemon_.client_env());
  const int32_t pid = StartImporter(importer);
  EXPECT_EQ(pid, importer.pid()) << "aclrtDeviceGetBareTgid is the pid acld knows";

  EXPECT_EQ(Ask(importer, "key " + key, "refused"), std::vector<std::string>{"207006"})
      << "not whitelisted yet";
  Ask(exporter, "allow " + std::to_string(pid), "allowed");
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  EXPECT_EQ(Ask(exporter, "word", "word"), std::vector<std::string>{"456"})
      << "the importer's write reached the exporter's memory";
  // The importer's own 4 bytes (for "late") beside it.
  EXPECT_EQ(daemon_.DeviceBytesUsed(), ReservedBytes(1 << 20) + ReservedBytes(4))
      << "shared memory is charged once, to the exporter";

  const auto [code, sharing] = daemon_.Aclctl({"sharing"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(sharing.find(key.substr(0, 8)), std::string::npos) << sharing;
  EXPECT_NE(sharing.find("pid " + std::to_string(pid)), std::string::npos) << sharing;
  EXPECT_EQ(sharing.find(key), std::string::npos) << "aclctl never shows a whole key";
  const auto [json_code, json] = daemon_.Aclctl({"sharing", "--json"});
  EXPECT_EQ(json_code, 0);
  EXPECT_NE(json.find("\"imports\""), std::string::npos) << json;

  Ask(exporter, "close", "closed");
  ExpectReadRefused(importer, "closed its key");
  Finish(importer);
  Finish(exporter);
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
}

TEST_F(SharingTest, TheKernelsPidDecidesNotTheProcesssOwnViewOfIt) {
  // An importer in its own pid namespace is pid 1 there; acld knows its host
  // pid. Whitelisting what it claims does not let it in; the pid of
  // aclrtDeviceGetBareTgid does.
  Process exporter({kSharing, "export", "0"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  std::map<std::string, std::string> env = daemon_.client_env();
  // Under --config=asan, LeakSanitizer cannot stop the threads of a process
  // that is its pid namespace's init (it reports their objects as leaks);
  // leaks of this client are checked outside a namespace by the other tests.
  env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1";
  Process importer({"/usr/bin/unshare", "--pid", "--fork", kSharing, "import"}, env);
  const int32_t pid = StartImporter(importer);
  const std::vector<std::string> words = WordsAfter(importer, "own ");
  ASSERT_FALSE(words.empty()) << importer.output();
  ASSERT_EQ(words[0], "1") << "the importer runs in its own pid namespace";
  ASSERT_NE(pid, 1);
  Ask(exporter, "allow 1", "allowed");
  EXPECT_EQ(Ask(importer, "key " + key, "refused"), std::vector<std::string>{"207006"});
  Ask(exporter, "allow " + std::to_string(pid), "allowed");
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  Finish(importer);
  Finish(exporter);
}

TEST_F(SharingTest, AnotherUserWithoutAWhitelistEntryIsRefused) {
  chmod(daemon_.dir().c_str(), 0711);  // another user reaches the sockets
  Process exporter({kSharing, "export", "0"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  Ask(exporter, "allow " + std::to_string(getpid()), "allowed");  // someone else
  const std::string copy = CopyForAnotherUser(daemon_.dir(), kSharing);
  EXPECT_EQ(RunAsUser(kOtherUser, {copy, "refused", key}, daemon_.dir(),
                      daemon_.client_env().at("ACLD_ADDRESS")),
            0);
  Finish(exporter);
}

TEST_F(SharingTest, AKilledImporterLeavesNothingBehind) {
  Process exporter({kSharing, "export", "1"}, daemon_.client_env());  // no whitelist
  const std::string key = StartExporter(exporter);
  Process importer({kSharing, "import"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  KillAndExpectForgotten(importer);
  Finish(exporter);
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
  EXPECT_TRUE(Eventually([&] {
    return daemon_.Aclctl({"sharing"}).second.find(key.substr(0, 8)) == std::string::npos;
  }));
}

TEST_F(SharingTest, AKilledExportersImportersFinishTheirWorkThenLoseTheMemory) {
  Process exporter({kSharing, "export", "1"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  Process importer({kSharing, "import"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  ExpectLaunchedWorkOutlivesTheKilledOwner(exporter, importer, "exporting process");
}

// An operation the importer launched before it could know of the revocation
// (acld received it, but the importer had not read the notice yet) still
// reaches the memory; its next call fails naming the reason, and the memory
// goes once the importer saw the notice.
TEST_F(SharingTest, WorkLaunchedBeforeTheImporterCouldKnowOfAFreeCompletes) {
  Process exporter({kSharing, "export", "1"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  Process importer({kSharing, "import"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  Ask(exporter, "free", "freed");
  // The importer, idle meanwhile, has not read the notice acld sent it.
  EXPECT_EQ(Ask(importer, "late", "late"), (std::vector<std::string>{"0", "456"}))
      << "the copy launched before the importer read the notice ran on the memory";
  ExpectReadRefused(importer, "the exporting process freed it");
  // The exporter's memory went with the notice; the importer's own 4 bytes
  // (for "late") are all that is left.
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == ReservedBytes(4); }))
      << daemon_.DeviceBytesUsed();
  Finish(importer);
  Finish(exporter);
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
}

// An importer that does not read its notice does not keep the exporter's
// memory: it goes after a bounded wait, and the importer's next use fails.
TEST_F(SharingTest, AnIdleImporterDoesNotHoldFreedMemory) {
  Process exporter({kSharing, "export", "1"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  Process importer({kSharing, "import"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  Ask(exporter, "free", "freed");
  const absl::Time freed = absl::Now();
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == ReservedBytes(4); }))
      << daemon_.DeviceBytesUsed();
  EXPECT_GE(absl::Now() - freed, absl::Seconds(1)) << "released before the importer could answer";
  ExpectReadRefused(importer, "the exporting process freed it");
  Finish(importer);
  Finish(exporter);
}

TEST_F(SharingTest, EvictingTheExporterRevokesImportsAsItsDeathWould) {
  Process exporter({kSharing, "export", "1"}, daemon_.client_env());
  const std::string key = StartExporter(exporter);
  Process importer({kSharing, "import"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"123"});
  uint64_t exporter_session = 0;
  const acl::v1::StatusReply status = daemon_.Status();
  for (const auto& session : status.sessions()) {
    if (session.pid() == exporter.pid()) exporter_session = session.id();
  }
  ASSERT_NE(exporter_session, 0u);
  EXPECT_EQ(daemon_.Aclctl({"evict", std::to_string(exporter_session)}).first, 0);
  ExpectReadRefused(importer, "exporting process");
  Finish(importer);
  exporter.Signal(SIGKILL);
  exporter.Wait(absl::Seconds(20));
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
}

TEST_F(SharingTest, AnIpcEventRecordedInOneProcessReleasesAWaitInAnother) {
  Process owner({kSharing, "event_owner"}, daemon_.client_env());
  ASSERT_TRUE(owner.WaitForLine("handle", absl::Seconds(20))) << owner.output();
  const std::vector<std::string> words = WordsAfter(owner, "handle ");
  ASSERT_FALSE(words.empty());
  const std::string handle = words[0];
  ASSERT_EQ(handle.size(), 64u);
  Process opener({kSharing, "event_opener"}, daemon_.client_env());
  EXPECT_EQ(Ask(opener, "handle " + std::string(64, '0'), "opened"),
            std::vector<std::string>{"100000"})
      << "no event has that handle";
  EXPECT_EQ(Ask(opener, "handle " + handle, "opened"), std::vector<std::string>{"0"});
  EXPECT_NE(daemon_.Aclctl({"sharing"}).second.find(handle.substr(0, 8)), std::string::npos);

  // The owner's record sits behind a 300 ms kernel: the opener's wait holds
  // until it has run.
  Ask(owner, "record", "recorded");
  const std::vector<std::string> waited = Ask(opener, "wait", "waited");
  ASSERT_EQ(waited.size(), 2u);
  EXPECT_EQ(waited[0], "0");
  int64_t ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(waited[1], &ms));
  EXPECT_GE(ms, 150) << "the wait held for the owner's record";
  // A record by the opener is a record of the same event.
  EXPECT_EQ(Ask(opener, "record", "recorded"), std::vector<std::string>{"0"});

  // The owner destroys it: the opener's handle is gone.
  Ask(owner, "destroy", "destroyed");
  EXPECT_EQ(Ask(opener, "record", "recorded"), std::vector<std::string>{"100000"})
      << opener.output();
  Finish(opener);
  Finish(owner);
}

TEST_F(SharingTest, AnIpcNotifyOnTheWhitelistSynchronizesTwoProcesses) {
  Process owner({kSharing, "notify_owner"}, daemon_.client_env());
  const std::string key = StartExporter(owner);
  ASSERT_EQ(key.size(), 64u);
  Process importer({kSharing, "notify_importer"}, daemon_.client_env());
  const int32_t pid = StartImporter(importer);
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"207006"})
      << "not whitelisted yet";
  Ask(owner, "allow " + std::to_string(pid), "allowed");
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"0"});
  const std::string sharing = daemon_.Aclctl({"sharing"}).second;
  EXPECT_NE(sharing.find("notify"), std::string::npos) << sharing;
  EXPECT_NE(sharing.find(key.substr(0, 8)), std::string::npos) << sharing;
  // The importer's wait holds its stream until the owner records.
  importer.WriteLine("wait");
  EXPECT_FALSE(importer.WaitForLine("waited", absl::Milliseconds(300))) << "the wait holds";
  Ask(owner, "record", "recorded");
  EXPECT_TRUE(importer.WaitForLine("waited", absl::Seconds(20))) << importer.output();
  EXPECT_EQ(WordsAfter(importer, "waited "), std::vector<std::string>{"0"});
  // The owner destroys it: the importer's handle is gone, and its destroy
  // still succeeds (cleanup in any order).
  Ask(owner, "destroy", "destroyed");
  EXPECT_EQ(Ask(importer, "record", "recorded"), std::vector<std::string>{"100000"});
  EXPECT_EQ(Ask(importer, "destroy", "destroyed"), std::vector<std::string>{"0"});
  Finish(importer);
  Finish(owner);
}

TEST_F(SharingTest, AKilledEventOwnersOpenersAreNotLeftWaiting) {
  Process owner({kSharing, "event_owner"}, daemon_.client_env());
  ASSERT_TRUE(owner.WaitForLine("handle", absl::Seconds(20))) << owner.output();
  const std::vector<std::string> words = WordsAfter(owner, "handle ");
  ASSERT_FALSE(words.empty());
  const std::string handle = words[0];
  Process opener({kSharing, "event_opener"}, daemon_.client_env());
  EXPECT_EQ(Ask(opener, "handle " + handle, "opened"), std::vector<std::string>{"0"});
  Ask(owner, "record", "recorded");
  owner.Signal(SIGKILL);
  owner.Wait(absl::Seconds(20));
  // The owner's handle went with it, and the opener's with the owner: its
  // wait is refused at once rather than parked.
  EXPECT_FALSE(Ask(opener, "wait", "waited").empty());
  EXPECT_TRUE(Eventually([&] {
    return daemon_.Aclctl({"sharing"}).second.find(handle.substr(0, 8)) == std::string::npos;
  }));
  Finish(opener);
}

TEST_F(SharingTest, AWaitForARecordTheKilledOwnerNeverRanEndsWithAnError) {
  Process owner({kSharing, "event_owner"}, daemon_.client_env());
  ASSERT_TRUE(owner.WaitForLine("handle", absl::Seconds(20))) << owner.output();
  const std::vector<std::string> words = WordsAfter(owner, "handle ");
  ASSERT_FALSE(words.empty());
  Process opener({kSharing, "event_opener"}, daemon_.client_env());
  EXPECT_EQ(Ask(opener, "handle " + words[0], "opened"), std::vector<std::string>{"0"});
  // The owner's record sits behind a 300 ms kernel (in acld once "recorded"
  // is said); the opener waits for it.
  Ask(owner, "record", "recorded");
  opener.WriteLine("wait");
  EXPECT_FALSE(opener.WaitForLine("waited", absl::Milliseconds(100))) << "the wait holds";
  owner.Signal(SIGKILL);
  owner.Wait(absl::Seconds(20));
  ASSERT_TRUE(opener.WaitForLine("waited", absl::Seconds(20))) << opener.output();
  const std::vector<std::string> waited = WordsAfter(opener, "waited ");
  ASSERT_FALSE(waited.empty());
  EXPECT_EQ(waited[0], "507022") << "ACL_ERROR_RT_IPC_ERROR: the record never ran";
  Finish(opener);
}

TEST_F(SharingTest, AnImportersWaitOnANotifyWhoseOwnerIsKilledEndsWithAnError) {
  Process owner({kSharing, "notify_owner"}, daemon_.client_env());
  const std::string key = StartExporter(owner);
  Process importer({kSharing, "notify_importer"}, daemon_.client_env());
  const int32_t pid = StartImporter(importer);
  Ask(owner, "allow " + std::to_string(pid), "allowed");
  EXPECT_EQ(Ask(importer, "key " + key, "imported"), std::vector<std::string>{"0"});
  importer.WriteLine("wait");
  EXPECT_FALSE(importer.WaitForLine("waited", absl::Milliseconds(200))) << "the wait holds";
  owner.Signal(SIGKILL);
  owner.Wait(absl::Seconds(20));
  ASSERT_TRUE(importer.WaitForLine("waited", absl::Seconds(20))) << importer.output();
  EXPECT_EQ(WordsAfter(importer, "waited "), std::vector<std::string>{"507022"});
  Finish(importer);
}

// Physical memory by shareable handle (aclrtMemExportToShareableHandle).
class PhysicalSharingTest : public SharingTest {
 protected:
  // Starts an owner and returns its shareable handle.
  std::string StartOwner(Process& owner) {
    EXPECT_TRUE(owner.WaitForLine("shareable", absl::Seconds(20))) << owner.output();
    const std::vector<std::string> words = WordsAfter(owner, "shareable ");
    return words.empty() ? "" : words[0];
  }
};

TEST_F(PhysicalSharingTest, OnlyAWhitelistedImporterMapsItAndItIsChargedOnce) {
  chmod(daemon_.dir().c_str(), 0711);  // another user reaches the sockets
  Process owner({kSharing, "physical_owner", "0"}, daemon_.client_env());
  const std::string shareable = StartOwner(owner);
  ASSERT_FALSE(shareable.empty());
  Process importer({kSharing, "physical_importer"}, daemon_.client_env());
  const int32_t pid = StartImporter(importer);
  EXPECT_EQ(Ask(importer, "shareable " + shareable, "refused"),
            std::vector<std::string>{"207006"})
      << "not whitelisted yet";
  Ask(owner, "allow " + std::to_string(pid), "allowed");
  const std::string copy = CopyForAnotherUser(daemon_.dir(), kSharing);
  EXPECT_EQ(RunAsUser(kOtherUser, {copy, "physical_refused", shareable}, daemon_.dir(),
                      daemon_.client_env().at("ACLD_ADDRESS")),
            0)
      << "another user, not on the whitelist";
  EXPECT_EQ(Ask(importer, "shareable " + shareable, "imported"), std::vector<std::string>{"123"});
  EXPECT_EQ(Ask(owner, "word", "word"), std::vector<std::string>{"456"})
      << "the importer's write reached the owner's memory";
  EXPECT_EQ(daemon_.DeviceBytesUsed(), uint64_t{2} << 20)
      << "shared physical memory is charged once, to its owner";
  const acl::v1::StatusReply status = daemon_.Status();
  bool importer_seen = false;
  for (const auto& session : status.sessions()) {
    if (session.pid() != importer.pid()) continue;
    importer_seen = true;
    // The importer's hold on it, as operators see it.
    EXPECT_EQ(session.physical_handles(), 1u);
    EXPECT_EQ(session.address_reservations(), 1u);
    EXPECT_EQ(session.address_mappings(), 1u);
    EXPECT_EQ(session.reserved_address_bytes(), uint64_t{2} << 20);
  }
  EXPECT_TRUE(importer_seen);
  const auto [code, sharing] = daemon_.Aclctl({"sharing"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(sharing.find("physical"), std::string::npos) << sharing;
  EXPECT_NE(sharing.find("pid " + std::to_string(pid)), std::string::npos) << sharing;
  EXPECT_EQ(sharing.find(shareable), std::string::npos) << "aclctl never shows a whole handle";

  // The owner frees first: the importer's mapping goes, and its own cleanup
  // still succeeds (checked by the client at exit).
  Ask(owner, "free", "freed");
  ExpectReadRefused(importer, "the exporting process freed it");
  Finish(importer);
  Finish(owner);
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
}

TEST_F(PhysicalSharingTest, AKilledOwnersImportersFinishTheirWorkThenLoseTheMemory) {
  Process owner({kSharing, "physical_owner", "1"}, daemon_.client_env());  // no whitelist
  const std::string shareable = StartOwner(owner);
  Process importer({kSharing, "physical_importer"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "shareable " + shareable, "imported"), std::vector<std::string>{"123"});
  ExpectLaunchedWorkOutlivesTheKilledOwner(owner, importer, "the exporting process ended");
}

TEST_F(PhysicalSharingTest, AKilledImporterLeavesNothingBehind) {
  Process owner({kSharing, "physical_owner", "1"}, daemon_.client_env());
  const std::string shareable = StartOwner(owner);
  Process importer({kSharing, "physical_importer"}, daemon_.client_env());
  StartImporter(importer);
  EXPECT_EQ(Ask(importer, "shareable " + shareable, "imported"), std::vector<std::string>{"123"});
  KillAndExpectForgotten(importer);
  Ask(owner, "free", "freed");
  Finish(owner);
  EXPECT_TRUE(Eventually([&] { return daemon_.DeviceBytesUsed() == 0; }));
}

}  // namespace
}  // namespace acld_test
