#include "tests/acld_fixture.h"

#include <signal.h>

#include "daemon/server/socket_path.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace acld_test {

AcldDaemon::AcldDaemon(const std::vector<std::string>& flags)
    : socket_(dir_.path() + "/acld.sock"), admin_socket_(dir_.path() + "/admin.sock") {
  std::vector<std::string> argv = {kAcldBinary, "--socket=" + socket_,
                                   "--admin_socket=" + admin_socket_,
                                   "--log_file=" + dir_.path() + "/acld.log"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  process_ = std::make_unique<Process>(argv);
  const bool up = WaitUntil(
      [&] {
        return acld::server::SocketIsLive(socket_) && acld::server::SocketIsLive(admin_socket_);
      },
      absl::Seconds(20)).has_value();
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

}  // namespace acld_test
