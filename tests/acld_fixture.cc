#include "tests/acld_fixture.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>

#include "daemon/server/socket_path.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace acld_test {

std::string AclBackendLibrary() {
  const char* library = std::getenv("ACLD_TEST_BACKEND_LIBRARY");
  if (library == nullptr || *library == '\0') return "";
  char resolved[PATH_MAX];
  return realpath(library, resolved) != nullptr ? resolved : library;
}

bool OnAclBackend() { return !AclBackendLibrary().empty(); }

uint64_t ReservedBytes(uint64_t size) {
  auto align_up = [](uint64_t value, uint64_t granule) {
    return (value + granule - 1) / granule * granule;
  };
  if (!OnAclBackend()) return align_up(size, 512);
  // aclrtMalloc rounds the size to 32 bytes, adds 32, and starts at 64.
  return align_up(align_up(size, 32) + 32, 64);
}

std::map<std::string, std::string> EmbeddedEnv() {
  std::map<std::string, std::string> env = {{"ACLD_ADDRESS", "embedded"}};
  const std::string library = AclBackendLibrary();
  if (!library.empty()) {
    env["ACLD_BACKEND"] = "acl";
    env["ACLD_BACKEND_LIBRARY"] = library;
    // Under --config=asan, LeakSanitizer cannot stop a process holding a
    // second runtime (the vendor's) whose threads are exiting: it aborts with
    // a "fatal error". Leaks of embedded clients are checked on the sim.
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1";
  }
  return env;
}

AcldDaemon::AcldDaemon(const std::vector<std::string>& flags, const std::string& socket_dir)
    : socket_((socket_dir.empty() ? dir_.path() : socket_dir) + "/acld.sock"),
      admin_socket_((socket_dir.empty() ? dir_.path() : socket_dir) + "/admin.sock") {
  std::vector<std::string> argv = {kAcldBinary, "--socket=" + socket_,
                                   "--admin_socket=" + admin_socket_,
                                   "--log_file=" + dir_.path() + "/acld.log"};
  const std::string library = AclBackendLibrary();
  if (!library.empty()) {
    argv.push_back("--backend=acl");
    argv.push_back("--backend_library=" + library);
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  process_ = std::make_unique<Process>(argv);
  const bool up =
      WaitUntil(
          [&] {
            return acld::server::SocketIsLive(socket_) && acld::server::SocketIsLive(admin_socket_);
          },
          absl::Seconds(20))
          .has_value();
  EXPECT_TRUE(up) << "acld did not start";
}

AcldDaemon::~AcldDaemon() { Stop(); }

std::optional<int> AcldDaemon::Stop() {
  process_->Signal(SIGTERM);
  return process_->Wait(absl::Seconds(20));
}

std::pair<int, std::string> AcldDaemon::Aclctl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {kAclctlBinary, "--admin_socket=" + admin_socket_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunToCompletion(argv);
}

acl::v1::StatusReply AcldDaemon::Status() const {
  const auto [code, json] = Aclctl({"--json", "status"});
  EXPECT_EQ(code, 0) << json;
  acl::v1::StatusReply status;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &status).ok()) << json;
  return status;
}

uint64_t AcldDaemon::DeviceBytesUsed() const {
  uint64_t used = 0;
  const acl::v1::StatusReply status = Status();  // a range-for would not keep a temporary alive
  for (const auto& device : status.devices()) used += device.used_bytes();
  return used;
}

bool AcldDaemon::AllDeviceMemoryFreed() const {
  return WaitUntil([&] { return DeviceBytesUsed() == 0; }, absl::Seconds(30)).has_value();
}

void ExpectScenarioPasses(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env) {
  const auto [code, output] = RunToCompletion(argv, env, absl::Seconds(120));
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ(output.find("FAIL"), std::string::npos) << output;
}

AcldDaemon* BothModesTest::daemon_ = nullptr;

void BothModesTest::SetUpTestSuite() { daemon_ = new AcldDaemon(); }

void BothModesTest::TearDownTestSuite() {
  delete daemon_;
  daemon_ = nullptr;
}

void BothModesTest::RunScenario(const std::string& binary, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  if (GetParam() == "embedded") return ExpectScenarioPasses(argv, EmbeddedEnv());
  ExpectScenarioPasses(argv, daemon_->client_env());
}

}  // namespace acld_test
