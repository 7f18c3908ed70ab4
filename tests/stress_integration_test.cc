// The stress run: 64 client processes at once, 8 of them killed with SIGKILL
// at random moments; afterwards acld holds nothing and has leaked nothing.
#include <dirent.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

int OpenFds(pid_t pid) {
  int count = 0;
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count - 2;  // . and ..
}

std::string StatusField(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

TEST(StressTest, SixtyFourClientsEightKilled) {
  // One user's 64 processes, each with up to 8 host funcs held on the device
  // at once: on --backend=acl that is 512 of the stand-in's 1024 notifies,
  // twice a uid's default share. This is a host with one user (the share is
  // tested in adversarial_test.cc and hal/acl/acl_backend_test.cc).
  AcldDaemon daemon({"--device_share_per_uid=100"});
  const pid_t acld = daemon.process().pid();
  {
    // gRPC opens a few descriptors of its own on first use under concurrency
    // (they stay, whatever the clients do): the baseline is taken after them.
    std::vector<std::unique_ptr<Process>> warm_up;
    for (int i = 0; i < 8; ++i) {
      warm_up.push_back(std::make_unique<Process>(
          std::vector<std::string>{"tests/device_client", "stress", std::to_string(100 + i)},
          daemon.client_env()));
    }
    for (auto& client : warm_up) ASSERT_EQ(client->Wait(absl::Seconds(120)), 0);
    ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  }
  const int fds_before = OpenFds(acld);
  std::mt19937 random(7);
  const absl::Time start = absl::Now();

  constexpr int kClients = 64;
  std::vector<std::unique_ptr<Process>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Process>(
        std::vector<std::string>{"tests/device_client", "stress", std::to_string(i)},
        daemon.client_env()));
  }
  std::vector<int> victims;
  for (int i = 0; i < kClients && victims.size() < 8; i += 8) victims.push_back(i + random() % 8);
  for (int victim : victims) {
    absl::SleepFor(absl::Milliseconds(random() % 250));
    clients[victim]->Signal(SIGKILL);
  }
  int passed = 0;
  for (int i = 0; i < kClients; ++i) {
    const std::optional<int> code = clients[i]->Wait(absl::Seconds(240));
    ASSERT_TRUE(code.has_value()) << "client " << i << " did not finish";
    const bool killed = std::find(victims.begin(), victims.end(), i) != victims.end();
    if (killed) continue;
    EXPECT_EQ(*code, 0) << "client " << i << ": " << clients[i]->output();
    passed += *code == 0;
  }
  const absl::Duration duration = absl::Now() - start;

  ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
  EXPECT_TRUE(daemon.AllDeviceMemoryFreed()) << daemon.DeviceBytesUsed();
  ASSERT_TRUE(WaitUntil([&] { return OpenFds(acld) <= fds_before; }, absl::Seconds(5)))
      << "fds before " << fds_before << ", now " << OpenFds(acld);

  // Figures for docs/performance.md.
  const std::string log = ReadFile(daemon.dir() + "/acld.log");
  std::vector<std::string> reaps;
  for (int victim : victims) {
    std::smatch match;
    const std::regex line("ended \\(pid " + std::to_string(clients[victim]->pid()) +
                          "\\): [^\\n]* in ([^\\n]*)");
    if (std::regex_search(log, match, line)) reaps.push_back(match[1]);
  }
  std::string reap_text;
  for (const std::string& reap : reaps) reap_text += reap + " ";
  std::printf(
      "stress: %d clients (%d passed, %zu killed) in %s; acld peak RSS%s, threads%s; "
      "fds %d before and %d after; reaping of killed sessions: %s\n",
      kClients, passed, victims.size(), absl::FormatDuration(duration).c_str(),
      StatusField(acld, "VmHWM").c_str(), StatusField(acld, "Threads").c_str(), fds_before,
      OpenFds(acld), reap_text.c_str());
  EXPECT_EQ(passed, kClients - static_cast<int>(victims.size()));
}

}  // namespace
}  // namespace acld_test
