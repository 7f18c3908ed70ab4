// aclctl: the operator's view of acld, over the admin socket.
//
//   aclctl [--admin_socket=PATH] [--json] status | sessions
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/acl/v1/admin.grpc.pb.h"
#include "tools/aclctl/json_printer.h"
#include "tools/aclctl/table.h"

ABSL_FLAG(std::string, admin_socket, "",
          "acld's admin socket (default: $ACLD_ADMIN_ADDRESS, else /run/acld/admin.sock)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of tables");

namespace {

constexpr char kUsage[] =
    "aclctl: inspect and operate acld.\n"
    "  aclctl [--admin_socket=PATH] [--json] status     version, uptime, host refcount, "
    "devices, sessions\n"
    "  aclctl [--admin_socket=PATH] [--json] sessions   every client session\n";

std::string AdminSocketPath() {
  std::string path = absl::GetFlag(FLAGS_admin_socket);
  if (path.empty()) {
    const char* env = std::getenv("ACLD_ADMIN_ADDRESS");
    path = env != nullptr && *env != '\0' ? env : "/run/acld/admin.sock";
  }
  if (absl::StartsWith(path, "unix:")) path = path.substr(5);
  return path;
}

std::string DeviceRefs(const acl::v1::SessionInfo& session) {
  std::vector<std::string> parts;
  for (const auto& [device, refs] : session.device_refs()) {
    parts.push_back(absl::StrCat(device, refs > 1 ? absl::StrCat("x", refs) : ""));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

std::string SessionsTable(const google::protobuf::RepeatedPtrField<acl::v1::SessionInfo>& sessions) {
  aclctl::Table table({"ID", "PID", "UID", "REFCOUNT", "DEVICES", "CONNECTED", "COMMAND"});
  for (const acl::v1::SessionInfo& session : sessions) {
    const absl::Time since = absl::FromUnixMillis(session.connected_since_unix_ms());
    table.AddRow({absl::StrCat(session.id()), absl::StrCat(session.pid()),
                  absl::StrCat(session.uid()), absl::StrCat(session.refcount()),
                  DeviceRefs(session), absl::FormatTime("%H:%M:%S", since, absl::LocalTimeZone()),
                  session.command()});
  }
  return table.Render();
}

void PrintStatus(const acl::v1::StatusReply& status) {
  std::printf("acld %s, up %.1f s\nhost refcount: %u\nsessions: %u\n\n", status.version().c_str(),
              status.uptime_seconds(), status.host_refcount(), status.session_count());
  aclctl::Table devices({"DEVICE", "NAME", "MEMORY", "UP", "SESSIONS"});
  for (const acl::v1::DeviceInfo& device : status.devices()) {
    devices.AddRow({absl::StrCat(device.id()), device.name(),
                    aclctl::HumanBytes(device.memory_bytes()), device.up() ? "yes" : "no",
                    absl::StrCat(device.sessions())});
  }
  std::printf("%s", devices.Render().c_str());
  if (status.sessions_size() > 0) std::printf("\n%s", SessionsTable(status.sessions()).c_str());
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "aclctl: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const std::string command = args[1];
  const std::string socket = AdminSocketPath();
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = acl::v1::Admin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  const bool json = absl::GetFlag(FLAGS_json);

  grpc::Status rpc;
  if (command == "status") {
    acl::v1::StatusReply reply;
    rpc = stub->GetStatus(&context, acl::v1::StatusRequest(), &reply);
    if (rpc.ok()) json ? (void)std::printf("%s\n", aclctl::ToJson(reply).c_str()) : PrintStatus(reply);
  } else if (command == "sessions") {
    acl::v1::SessionsReply reply;
    rpc = stub->ListSessions(&context, acl::v1::SessionsRequest(), &reply);
    if (rpc.ok()) {
      std::printf("%s", json ? (aclctl::ToJson(reply) + "\n").c_str()
                             : SessionsTable(reply.sessions()).c_str());
    }
  } else {
    std::fprintf(stderr, "aclctl: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  }
  if (rpc.error_code() == grpc::StatusCode::UNAVAILABLE ||
      rpc.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Fail(absl::StrCat("cannot reach acld's admin socket at ", socket, " (",
                             rpc.error_message(),
                             "); is acld running? set --admin_socket or ACLD_ADMIN_ADDRESS"));
  }
  if (!rpc.ok()) return Fail(absl::StrCat(command, " failed: ", rpc.error_message()));
  return 0;
}
