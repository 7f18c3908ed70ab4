// Host callbacks streamed back to the processes that launched them, arbitrated
// by a real acld; the single-process scenarios also run in embedded mode.
#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

constexpr char kCallbackClient[] = "tests/callback_client";

void ExpectCallbackScenarioPasses(const std::vector<std::string>& args,
                                  const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {kCallbackClient};
  argv.insert(argv.end(), args.begin(), args.end());
  ExpectScenarioPasses(argv, env);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

class CallbackScenarioTest : public BothModesTest {
 protected:
  void Run(const std::vector<std::string>& args) { RunScenario(kCallbackClient, args); }
};

TEST_P(CallbackScenarioTest, SeedHostFuncSample) { Run({"seed_hostfunc"}); }
TEST_P(CallbackScenarioTest, StrictOrderWithASlowHostFunc) { Run({"ordering"}); }
TEST_P(CallbackScenarioTest, BlockVersusNoBlock) { Run({"block_modes"}); }
TEST_P(CallbackScenarioTest, EveryErrorPath) { Run({"errors"}); }
TEST_P(CallbackScenarioTest, ExceptionInfoAndStopOnFailure) { Run({"exception", "stop"}); }
TEST_P(CallbackScenarioTest, ExceptionInfoAndContinueOnFailure) { Run({"exception", "continue"}); }
TEST_P(CallbackScenarioTest, SubscribedThreadRunsHostFuncs) { Run({"subscribed"}); }
TEST_P(CallbackScenarioTest, ThousandsOfHostFuncs) { Run({"many", "3000"}); }
TEST_P(CallbackScenarioTest, HostFuncsOfFourStreamsRunAtOnce) { Run({"relay"}); }
TEST_P(CallbackScenarioTest, CallsInsideAHostFuncAndBesideIt) { Run({"calls_in_callback"}); }
TEST_P(CallbackScenarioTest, HostFuncsWhileLargeCopiesFillTheChannel) { Run({"traffic"}); }

INSTANTIATE_TEST_SUITE_P(Modes, CallbackScenarioTest, ::testing::Values("daemon", "embedded"),
                         [](const auto& info) { return info.param; });

// On the shared-memory channel, more host funcs at once than the library has
// event threads: the ones a caller reads while every event thread is in a
// callback still run (on the dispatcher's threads), so the host funcs that
// wait for them finish.
TEST(CallbackIntegrationTest, HostFuncsOfSixStreamsRunAtOnce) {
  AcldDaemon daemon;
  std::map<std::string, std::string> env = daemon.client_env();
  env["ACLD_TRANSPORT"] = "shm";  // over gRPC, only the dispatcher's threads run host funcs
  ExpectCallbackScenarioPasses({"relay", "6"}, env);
}

// The library's exit handler ends the session without waiting for a host
// func still running (it may never return); acld reaps the session.
TEST(CallbackIntegrationTest, AProcessExitsWhileAHostFuncStillRuns) {
  AcldDaemon daemon;
  Process client({kCallbackClient, "exit_in_callback"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("exiting", absl::Seconds(20))) << client.output();
  EXPECT_EQ(client.Wait(absl::Seconds(10)), 0) << client.output();
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(10)));
}

TEST(CallbackIntegrationTest, ACallbackNeverFinishedTimesOutItsStream) {
  AcldDaemon daemon({"--callback_timeout=1"});
  ExpectCallbackScenarioPasses({"stuck"}, daemon.client_env());
  const std::string log = ReadFile(daemon.dir() + "/acld.log");
  EXPECT_NE(log.find("did not finish callback"), std::string::npos) << log;
}

TEST(CallbackIntegrationTest, TimeoutIsVisibleInAclctlWhileTheSessionLives) {
  AcldDaemon daemon({"--callback_timeout=1"});
  Process client({kCallbackClient, "stuck"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("stuck timed out", absl::Seconds(20))) << client.output();
  const auto [code, sessions] = daemon.Aclctl({"sessions"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(sessions.find("1 timed out"), std::string::npos) << sessions;
  EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
}

TEST(CallbackIntegrationTest, ClientKilledInsideAHostFuncIsReapedAndOthersGoOn) {
  AcldDaemon daemon;
  Process hanging({kCallbackClient, "hang"}, daemon.client_env());
  ASSERT_TRUE(hanging.WaitForLine("in callback", absl::Seconds(20)));
  Process other({kCallbackClient, "many", "2000"}, daemon.client_env());
  // The session inside its callback shows one callback pending.
  const acl::v1::StatusReply before = daemon.Status();
  bool shown = false;
  for (const auto& session : before.sessions()) {
    if (session.pid() == hanging.pid()) shown = session.pending_callbacks() == 1;
  }
  EXPECT_TRUE(shown) << daemon.Aclctl({"sessions"}).second;
  hanging.Signal(SIGKILL);
  EXPECT_EQ(other.Wait(absl::Seconds(60)), 0) << other.output();
  ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(2)));
  EXPECT_TRUE(daemon.AllDeviceMemoryFreed()) << daemon.DeviceBytesUsed();
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
}

TEST(CallbackIntegrationTest, TwoProcessesNeverSeeEachOthersCallbacks) {
  AcldDaemon daemon;
  Process first({kCallbackClient, "many", "3000"}, daemon.client_env());
  Process second({kCallbackClient, "many", "2500"}, daemon.client_env());
  EXPECT_EQ(first.Wait(absl::Seconds(60)), 0) << first.output();
  EXPECT_EQ(second.Wait(absl::Seconds(60)), 0) << second.output();
  EXPECT_NE(first.output().find("many 3000 ok"), std::string::npos) << first.output();
  EXPECT_NE(second.output().find("many 2500 ok"), std::string::npos) << second.output();
}

}  // namespace
}  // namespace acld_test
