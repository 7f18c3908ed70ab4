// The kernel API end to end (binaries, functions, argument lists, launches,
// failures) in real client processes, against acld and embedded.
#include <cstdlib>
#include <string>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

constexpr char kKernelClient[] = "tests/kernel_client";

class KernelTest : public BothModesTest {
 public:
  // A directory the client may write its binary files to.
  static std::string ScratchDir() {
    const char* dir = std::getenv("TEST_TMPDIR");
    return dir != nullptr ? dir : "/tmp";
  }
};

TEST_P(KernelTest, LoadGetFunctionArgumentsLaunchUnload) {
  RunScenario(kKernelClient, {"launch", ScratchDir()});
}
TEST_P(KernelTest, PlaceholderArgumentsReachTheKernel) {
  RunScenario(kKernelClient, {"placeholder"});
}
// The argument block is read when the stream reaches the launch, so its
// ranges are pinned only then: until then, what the program frees waits.
TEST_P(KernelTest, MemoryFreedUnderAQueuedDeviceArgumentLaunchStaysUntilItIsDropped) {
  RunScenario(kKernelClient, {"free_under_launch", ScratchDir()});
}
TEST_P(KernelTest, RefusalsCarryTheirCodes) { RunScenario(kKernelClient, {"errors", ScratchDir()}); }
TEST_P(KernelTest, LargeBinariesTravelInSharedMemory) { RunScenario(kKernelClient, {"large"}); }
// Device printf reaches the launching process's stdout, in order. With a
// vendor runtime (--backend=acl) the vendor prints: in acld (daemon mode),
// where the scenario checks only that printing kernels run, or in this
// process on the vendor's own schedule (embedded), where it checks the text
// after a synchronization.
TEST_P(KernelTest, DevicePrintfReachesTheCallersStdout) {
  const char* where = !OnAclBackend()            ? "here"
                      : GetParam() == "embedded" ? "synchronized"
                                                 : "elsewhere";
  RunScenario(kKernelClient, {"print", where});
}

// What acld's backend keeps for a stream's kernel arguments (on
// --backend=acl, an 8 KiB ring in device memory once the stream launched) is
// charged to the session, as its memory, until the stream is destroyed; a
// launch whose ring the session's quota has no room for fails.
TEST(KernelArgumentsTest, WhatTheBackendKeepsForAStreamsArgumentsIsChargedToItsSession) {
  AcldDaemon daemon;
  Process client({kKernelClient, "argument_ring", KernelTest::ScratchDir()},
                 daemon.client_env());
  const auto session = [&] {
    const acl::v1::StatusReply status = daemon.Status();
    for (const acl::v1::SessionInfo& info : status.sessions()) {
      if (info.pid() == client.pid()) return info;
    }
    return acl::v1::SessionInfo();
  };
  const auto memory = [&] { return session().memory_bytes(); };
  ASSERT_TRUE(client.WaitForLine("allocated", absl::Seconds(20))) << client.output();
  const uint64_t allocated = memory();
  EXPECT_GT(allocated, 0u);
  client.WriteLine("launch");
  ASSERT_TRUE(client.WaitForLine("launched", absl::Seconds(20))) << client.output();
  const uint64_t ring = OnAclBackend() ? ReservedBytes(8 << 10) : 0;
  EXPECT_EQ(memory(), allocated + ring);
  client.WriteLine("destroy");
  ASSERT_TRUE(client.WaitForLine("destroyed", absl::Seconds(20))) << client.output();
  EXPECT_TRUE(WaitUntil([&] { return memory() == allocated; }, absl::Seconds(10))) << memory();
  // No room for another ring under the quota: the launch fails on acl.
  EXPECT_EQ(daemon.Aclctl({"quota", std::to_string(session().id()),
                           "--memory=" + std::to_string(allocated)})
                .first,
            0);
  client.WriteLine(std::to_string(OnAclBackend() ? ACL_ERROR_RT_MEMORY_ALLOCATION : ACL_SUCCESS));
  EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
}

INSTANTIATE_TEST_SUITE_P(Modes, KernelTest, ::testing::Values("daemon", "embedded"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace acld_test
