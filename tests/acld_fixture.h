// A real acld on temporary sockets, for integration tests.
#ifndef ACLD_TESTS_ACLD_FIXTURE_H_
#define ACLD_TESTS_ACLD_FIXTURE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/acl/v1/admin.pb.h"
#include "tests/process.h"

namespace acld_test {

// Paths of the binaries under test, relative to the test's runfiles root.
inline constexpr char kAcldBinary[] = "daemon/acld";
inline constexpr char kAclctlBinary[] = "tools/aclctl/aclctl";
inline constexpr char kScenarioClient[] = "tests/scenario_client";

// The vendor runtime the suite drives through acld's acl backend, when it
// runs on that backend (ACLD_TEST_BACKEND_LIBRARY, set by the *_on_acl
// targets: the stand-in vendor runtime); empty on the sim.
std::string AclBackendLibrary();
// True when the suite runs on the acl backend (the *_on_acl targets).
bool OnAclBackend();
// Device bytes an allocation of `size` holds on the suite's backend: the sim
// rounds to 512 bytes (hal/sim/sim_device.cc); the acl backend charges CANN's
// documented rounding (hal/acl/allocation_ledger.cc).
uint64_t ReservedBytes(uint64_t size);
// The environment of a client in embedded mode, on the suite's backend.
std::map<std::string, std::string> EmbeddedEnv();

class AcldDaemon {
 public:
  // Starts acld with `flags` added and waits until both sockets accept.
  // Its sockets are in `socket_dir` when given (a restarted acld finds what
  // the previous one left there), else in a directory of its own.
  explicit AcldDaemon(const std::vector<std::string>& flags = {},
                      const std::string& socket_dir = "");
  ~AcldDaemon();

  const std::string& socket() const { return socket_; }
  const std::string& admin_socket() const { return admin_socket_; }
  const std::string& dir() const { return dir_.path(); }
  // The environment a client needs to reach this daemon.
  std::map<std::string, std::string> client_env() const {
    return {{"ACLD_ADDRESS", "unix:" + socket_}};
  }

  // `aclctl --json status`, parsed. Fails the test when aclctl fails.
  acl::v1::StatusReply Status() const;
  // Device memory in use on all devices (from Status()).
  uint64_t DeviceBytesUsed() const;
  // Waits (bounded) until no device memory is in use: a closed session's
  // memory is freed just after it leaves the session count.
  bool AllDeviceMemoryFreed() const;
  // Runs aclctl with `args` against this daemon: {exit code, stdout}.
  std::pair<int, std::string> Aclctl(const std::vector<std::string>& args) const;

  // SIGTERM and wait: the exit code (nullopt if it did not stop in time).
  std::optional<int> Stop();
  Process& process() { return *process_; }

 private:
  TempDir dir_;
  std::string socket_;
  std::string admin_socket_;
  std::unique_ptr<Process> process_;
};

// Runs `argv` (a scenario client) with `env` and expects it to pass: exit 0
// and no "FAIL" line.
void ExpectScenarioPasses(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env);

// A suite whose scenarios run in both modes: the parameter is "daemon" (one
// acld shared by the suite) or "embedded" (ACLD_ADDRESS=embedded).
class BothModesTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  // Runs `binary args` in this test's mode and expects it to pass.
  void RunScenario(const std::string& binary, const std::vector<std::string>& args);

 private:
  static AcldDaemon* daemon_;
};

// Polls `condition` every 10 ms until it holds or `timeout` passes; returns
// how long it took, or nullopt on timeout.
template <typename Condition>
std::optional<absl::Duration> WaitUntil(Condition condition, absl::Duration timeout);

}  // namespace acld_test

#include "absl/time/clock.h"

namespace acld_test {

template <typename Condition>
std::optional<absl::Duration> WaitUntil(Condition condition, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  while (!condition()) {
    if (absl::Now() - start > timeout) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::Now() - start;
}

}  // namespace acld_test

#endif  // ACLD_TESTS_ACLD_FIXTURE_H_
