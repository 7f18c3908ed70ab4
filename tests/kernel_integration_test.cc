// The kernel API end to end (binaries, functions, argument lists, launches,
// failures) in real client processes, against acld and embedded.
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

constexpr char kKernelClient[] = "tests/kernel_client";

class KernelTest : public BothModesTest {
 protected:
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
TEST_P(KernelTest, RefusalsCarryTheirCodes) { RunScenario(kKernelClient, {"errors", ScratchDir()}); }
TEST_P(KernelTest, LargeBinariesTravelInSharedMemory) { RunScenario(kKernelClient, {"large"}); }

INSTANTIATE_TEST_SUITE_P(Modes, KernelTest, ::testing::Values("daemon", "embedded"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace acld_test
