// aclctl: the operator's view of acld, over the admin socket.
//
//   aclctl [--admin_socket=PATH] [--json] status | sessions | streams [--session=ID] | memory |
//          sharing |
//          devices | watch | evict SESSION | quota SESSION|--default [--memory=B] [--streams=N] |
//          weight SESSION N | device disable|enable ID | group ...
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/acl/help_lists_own_flags.h"
#include "proto/acl/protocol.h"
#include "proto/acl/v1/admin.grpc.pb.h"
#include "tools/aclctl/group_command.h"
#include "tools/aclctl/json_printer.h"
#include "tools/aclctl/table.h"

ABSL_FLAG(std::string, admin_socket, "",
          "acld's admin socket (default: $ACLD_ADMIN_ADDRESS, else /run/acld/admin.sock)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of tables");
ABSL_FLAG(uint64_t, session, 0, "streams: only this session's");
ABSL_FLAG(bool, default, false, "quota: set the default of sessions that open later");
ABSL_FLAG(std::string, memory, "",
          "quota: device memory in bytes (0: no limit); group create: bytes on every device, "
          "or one value per device, comma-separated");
ABSL_FLAG(int64_t, streams, -1,
          "quota, group create: streams, default streams included (0: no limit)");
ABSL_FLAG(std::string, devices, "", "group create: host device ids, comma-separated");
ABSL_FLAG(int64_t, sessions, -1,
          "group create: sessions of the group at once (0: acld's --max_sessions_per_uid)");
ABSL_FLAG(double, interval, 1.0, "watch: seconds between refreshes");
ABSL_FLAG(int32_t, count, 0, "watch: stop after this many refreshes (0: until interrupted)");

namespace {

constexpr char kUsage[] =
    "aclctl: inspect and operate acld.\n"
    "  aclctl [--admin_socket=PATH] [--json] COMMAND\n"
    "  status                 version, uptime, host refcount, devices, sessions\n"
    "  sessions               every client session\n"
    "  streams [--session=ID] every stream (of one session)\n"
    "  memory                 device memory per device and per session\n"
    "  sharing                what processes share: exported device memory (whitelists,\n"
    "                         importers), IPC events and notifies (who opened them)\n"
    "  devices                the devices, with their utilization (COMPUTE: share of the last\n"
    "                         second spent computing, - when the backend cannot tell)\n"
    "  watch [--interval=S] [--count=N]   status, refreshed\n"
    "  evict SESSION          release a session as if its process died\n"
    "  quota SESSION | --default  [--memory=BYTES] [--streams=N]   set quotas (0: no limit)\n"
    "  weight SESSION N       the session's share of each device's time (1..1000)\n"
    "  device disable|enable ID   take a device out (new users refused; those holding it\n"
    "                         keep it) or back in\n"
    "  group create --devices=ID[,ID] [--memory=BYTES[,BYTES]] [--streams=N] [--sessions=N]\n"
    "               [--label key=value ...]   a quota group: its own socket directory; its\n"
    "                         processes share its limits and see its devices from 0\n"
    "  group list | show ID | delete ID | label ID key=value... key-...\n"
    "sessions shows each use beside its limit (USE/LIMIT; none: no limit): STREAMS open\n"
    "(+closing), CTX contexts created, EVENTS, DEVMEM device memory, ALLOCS its\n"
    "allocations, HOSTMEM shared\n"
    "memory acld maps (SEGS segments), QUEUED queued work, IN a request still arriving in\n"
    "pieces, OUT messages waiting for the process to read them, BIN kernel binaries loaded\n"
    "(count:bytes/limit), CALLS calls waiting in acld,\n"
    "CB callbacks pending (timed out), W weight.\n"
    "status also shows what each uid's (or quota group's) sessions hold together, against\n"
    "the limits per uid: ALLOCS, BIN bytes, QUEUED work, SEGS host memory segments, MSGS\n"
    "messages held (requests arriving, replies not read).\n";

using aclctl::BytesOfLimit;
using aclctl::CountOfLimit;
using aclctl::HumanBytes;
using aclctl::Table;

// Text a client chose, safe for a terminal (acld escapes it already; an
// older daemon may not have).
std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out;
}

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

std::string SessionsTable(
    const google::protobuf::RepeatedPtrField<acl::v1::SessionInfo>& sessions) {
  Table table({"ID", "PID", "UID", "REF", "DEVICES", "STREAMS", "CTX", "EVENTS", "DEVMEM",
               "ALLOCS", "HOSTMEM", "SEGS", "QUEUED", "IN", "OUT", "BIN", "CALLS", "CB", "W", "VIA", "SINCE",
               "COMMAND"});
  for (const acl::v1::SessionInfo& session : sessions) {
    const absl::Time since = absl::FromUnixMillis(session.connected_since_unix_ms());
    table.AddRow(
        {absl::StrCat(session.id()), absl::StrCat(session.pid()), absl::StrCat(session.uid()),
         absl::StrCat(session.refcount()), DeviceRefs(session),
         CountOfLimit(session.streams(), session.max_streams(), session.closing_streams()),
         CountOfLimit(session.contexts(), session.max_contexts()),
         CountOfLimit(session.events(), session.max_events()),
         BytesOfLimit(session.memory_bytes(), session.memory_quota()),
         CountOfLimit(session.memory_allocations(), session.max_memory_allocations()),
         // Here 0 maps nothing rather than no limit.
         absl::StrCat(HumanBytes(session.host_memory_bytes()), "/",
                      HumanBytes(session.max_host_memory_bytes())),
         absl::StrCat(session.host_memory_segments(), "/", session.max_host_memory_segments()),
         BytesOfLimit(session.queued_bytes(), session.queued_bytes_limit()),
         HumanBytes(session.inbound_bytes()),
         // The same flag bounds what waits for the process to read it.
         BytesOfLimit(session.outbound_bytes(), session.queued_bytes_limit()),
         absl::StrCat(session.binaries(), ":",
                      BytesOfLimit(session.binary_bytes(), session.max_binary_bytes())),
         CountOfLimit(session.waiting_calls(), session.max_waiting_calls()),
         absl::StrCat(session.pending_callbacks(),
                      session.callback_timeouts() > 0
                          ? absl::StrCat(" (", session.callback_timeouts(), " timed out)")
                          : ""),
         absl::StrCat(session.weight()),
         session.carrier().empty() ? "-"
         : session.protocol_version() == 0
             ? session.carrier()
             : absl::StrCat(session.carrier(), " v", session.protocol_version()),
         absl::FormatTime("%H:%M:%S", since, absl::LocalTimeZone()), Printable(session.command())});
  }
  return table.Render();
}

std::string DevicesText(const acl::v1::StatusReply& status);

// "dev 0: 3/495 streams, 2/16384 events; dev 1: ...": what a tenant holds
// on each device against its share (--device_share_per_uid); "-" for none.
std::string OnDevices(const acl::v1::TenantUsage& tenant,
                      const std::map<int32_t, const acl::v1::DeviceInfo*>& devices) {
  struct Held {
    uint32_t streams = 0, events = 0, notifies = 0;
  };
  std::map<int32_t, Held> held;
  for (const auto& [device, streams] : tenant.streams_on_device()) held[device].streams = streams;
  for (const auto& [device, events] : tenant.events_on_device()) held[device].events = events;
  for (const auto& [device, notifies] : tenant.notifies_on_device()) {
    held[device].notifies = notifies;
  }
  const acl::v1::DeviceInfo none;
  std::vector<std::string> parts;
  for (const auto& [id, counts] : held) {
    auto found = devices.find(id);
    const acl::v1::DeviceInfo& device = found == devices.end() ? none : *found->second;
    std::string part = absl::StrCat("dev ", id, ": ",
                                    CountOfLimit(counts.streams, device.streams_per_uid()),
                                    " streams, ", CountOfLimit(counts.events, device.events_per_uid()),
                                    " events");
    // Only backends that take notifies for their streams (acl) have any.
    if (counts.notifies > 0 || device.max_notifies() > 0) {
      absl::StrAppend(&part, ", ", CountOfLimit(counts.notifies, device.notifies_per_uid()),
                      " notifies");
    }
    parts.push_back(std::move(part));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, "; ");
}

// What each uid's (or quota group's) sessions hold together, against the
// limits per uid.
std::string TenantsTable(const acl::v1::StatusReply& status) {
  Table table({"TENANT", "SESSIONS", "PENDING", "STREAMS", "CTX", "EVENTS", "ALLOCS", "BIN",
               "QUEUED", "SEGS", "MSGS", "ON DEVICES"});
  std::map<int32_t, const acl::v1::DeviceInfo*> devices;
  for (const acl::v1::DeviceInfo& device : status.devices()) devices[device.id()] = &device;
  for (const acl::v1::TenantUsage& tenant : status.tenants()) {
    table.AddRow({tenant.group().empty() ? absl::StrCat("uid ", tenant.uid())
                                         : absl::StrCat("group ", tenant.group()),
                  absl::StrCat(tenant.sessions()),
                  CountOfLimit(tenant.pending_sessions(), status.max_pending_sessions_per_uid()),
                  CountOfLimit(tenant.streams(), status.max_streams_per_uid()),
                  CountOfLimit(tenant.contexts(), status.max_contexts_per_uid()),
                  CountOfLimit(tenant.events(), status.max_events_per_uid()),
                  CountOfLimit(tenant.memory_allocations(), status.max_allocations_per_uid()),
                  BytesOfLimit(tenant.binary_bytes(), status.max_binary_bytes_per_uid()),
                  BytesOfLimit(tenant.queued_bytes(), status.max_queued_bytes_per_uid()),
                  CountOfLimit(tenant.host_segments(), status.max_host_segments_per_uid()),
                  BytesOfLimit(tenant.message_bytes(), status.max_message_bytes_per_uid()),
                  OnDevices(tenant, devices)});
  }
  return table.Render();
}

// "N bytes (uid U: n, ...), at most M per uid; K requests waited ...": what
// the requests gRPC is still receiving are charged.
std::string ArrivingRequests(const acl::v1::StatusReply& status) {
  uint64_t total = 0;
  std::map<uint32_t, uint64_t> by_uid(status.grpc_arriving_bytes().begin(),
                                      status.grpc_arriving_bytes().end());
  std::vector<std::string> uids;
  for (const auto& [uid, bytes] : by_uid) {
    total += bytes;
    uids.push_back(absl::StrCat("uid ", uid, ": ", bytes));
  }
  return absl::StrCat(total, " bytes", uids.empty() ? "" : absl::StrCat(" (", absl::StrJoin(uids, ", "), ")"),
                      status.max_grpc_arriving_bytes_per_uid() > 0
                          ? absl::StrCat(", at most ", status.max_grpc_arriving_bytes_per_uid(),
                                         " per uid")
                          : "",
                      "; ", status.requests_delayed(), " requests waited for their uid's others");
}

std::string StatusText(const acl::v1::StatusReply& status) {
  std::string out = absl::StrCat(
      "acld ", status.version(), ", up ", absl::StrFormat("%.1f", status.uptime_seconds()),
      " s\nbackend: ", status.backend(), "\nhost refcount: ", status.host_refcount(), "\nsessions: ", status.session_count());
  if (status.max_sessions() > 0) {
    absl::StrAppend(&out, " (limit ", status.max_sessions(), ", ", status.max_sessions_per_uid(),
                    " per uid)");
  }
  if (status.sessions_closing() > 0) {
    absl::StrAppend(&out, ", ", status.sessions_closing(), " closing");
  }
  absl::StrAppend(&out, "\npending: ", status.pending_sessions(), " waiting for Hello",
                  status.max_pending_sessions() > 0
                      ? absl::StrCat(" (limit ", status.max_pending_sessions(), ", ",
                                     status.max_pending_sessions_per_uid(), " per uid)")
                      : "",
                  "\nconnections: ", status.connections_open(), " open, ",
                  status.connections_accepted(), " accepted",
                  status.accept_pauses() > 0
                      ? absl::StrCat(", accepting paused ", status.accept_pauses(),
                                     " times (out of descriptors)")
                      : "",
                  status.max_connections_per_uid() > 0
                      ? absl::StrCat(", ", status.connections_refused(),
                                     " closed at once (their uid held ",
                                     status.max_connections_per_uid(), ")")
                      : "",
                  status.max_grpc_memory_bytes() > 0
                      ? absl::StrCat("; gRPC may take ", status.max_grpc_memory_bytes(),
                                     " bytes for them")
                      : "",
                  "; ", status.connections_cut(),
                  " cut (too many streams, a request over 16 MiB or over its charge), ",
                  status.streams_delayed(), " streams held to their uid's rate",
                  "\ngRPC requests arriving: ", ArrivingRequests(status),
                  "\nrefused: ", status.sessions_refused(), " sessions, ", status.hello_timeouts(),
                  " without Hello in time\nidentity socket: ", status.identity_pending(),
                  " requests being served, ", status.identity_busy(),
                  " connections told to come back (their uid had 32 being served)",
                  "\nsessions' command lines still to read: ", status.command_lines_waiting(),
                  "\nreceived descriptors whose close may wait: ", status.slow_closes_waiting(),
                  " waiting, ", status.slow_closes_done(), " closed, ",
                  status.descriptors_kept_open(), " kept open (too many waited)",
                  "\nwork on clients' memory: ", status.memory_work_running(),
                  " running (sealing, filling), ", status.memory_work_late(),
                  " of them late (their user holds them), ", status.memory_work_refused_senders(),
                  " users refused for a while (each identity socket's apart)",
                  "\nolder clients' memory filled from their own mapping: ",
                  status.filled_mappings(), " mappings, ", status.filled_processes(),
                  " processes' memory open",
                  "\nhost memory segments mapped: ",
                  CountOfLimit(status.host_segments(), status.max_host_segments()), "\n\n");
  out += DevicesText(status);
  if (status.tenants_size() > 0) out += "\n" + TenantsTable(status);
  if (status.sessions_size() > 0) out += "\n" + SessionsTable(status.sessions());
  return out;
}

std::string StreamsText(const acl::v1::StreamsReply& reply) {
  Table table({"STREAM", "SESSION", "DEVICE", "PRIORITY", "QUEUED", "COMPLETED", "FAILED",
               "DISCARDED", "MODE", "ALLOCATOR", "STATE"});
  for (const acl::v1::StreamInfo& stream : reply.streams()) {
    table.AddRow({absl::StrCat(stream.id()), absl::StrCat(stream.session()),
                  absl::StrCat(stream.device()), absl::StrCat(stream.priority()),
                  absl::StrCat(stream.queued()), absl::StrCat(stream.completed()),
                  absl::StrCat(stream.failed()), absl::StrCat(stream.discarded()),
                  stream.failure_mode(), stream.custom_allocator() ? "custom" : "-",
                  stream.state()});
  }
  return table.Render();
}

std::string MemoryText(const acl::v1::MemoryReply& reply) {
  Table devices({"DEVICE", "TOTAL", "USED", "FREE"});
  for (const acl::v1::DeviceMemory& device : reply.devices()) {
    devices.AddRow({absl::StrCat(device.device()), HumanBytes(device.total_bytes()),
                    HumanBytes(device.used_bytes()),
                    HumanBytes(device.total_bytes() - device.used_bytes())});
  }
  Table sessions({"SESSION", "PID", "ALLOCATED", "QUOTA"});
  for (const acl::v1::SessionMemory& session : reply.sessions()) {
    sessions.AddRow({absl::StrCat(session.session()), absl::StrCat(session.pid()),
                     HumanBytes(session.bytes()),
                     session.quota() == 0 ? "none" : HumanBytes(session.quota())});
  }
  return devices.Render() + "\n" + sessions.Render();
}

std::string SharingText(const acl::v1::SharingReply& reply) {
  Table exports(
      {"KIND", "KEY", "OWNER", "PID", "DEVICE", "ADDRESS", "SIZE", "WHITELIST", "IMPORTED BY"});
  for (const acl::v1::SharedMemoryExport& shared : reply.exports()) {
    std::vector<std::string> whitelist, importers;
    for (int32_t pid : shared.whitelist()) whitelist.push_back(absl::StrCat(pid));
    for (const acl::v1::SharedMemoryImport& imported : shared.imports()) {
      importers.push_back(absl::StrCat("session ", imported.session(), " (pid ", imported.pid(), ")"));
    }
    exports.AddRow({shared.kind(), shared.key_prefix() + "…", absl::StrCat(shared.owner_session()),
                    absl::StrCat(shared.owner_pid()), absl::StrCat(shared.device()),
                    shared.kind() == "physical" ? "-" : absl::StrCat("0x", absl::Hex(shared.address())),
                    HumanBytes(shared.bytes()),
                    shared.pid_validation()
                        ? (whitelist.empty() ? "(empty)" : absl::StrJoin(whitelist, ","))
                        : "any (validation disabled)",
                    importers.empty() ? "-" : absl::StrJoin(importers, ", ")});
  }
  Table events({"KIND", "KEY", "OWNER", "PID", "DEVICE", "OPENED BY"});
  for (const acl::v1::SharedEvent& shared : reply.events()) {
    std::vector<std::string> openers;
    for (const acl::v1::SharedMemoryImport& opener : shared.openers()) {
      openers.push_back(absl::StrCat("session ", opener.session(), " (pid ", opener.pid(), ")"));
    }
    events.AddRow({shared.kind(), shared.key_prefix() + "…", absl::StrCat(shared.owner_session()),
                   absl::StrCat(shared.owner_pid()), absl::StrCat(shared.device()),
                   openers.empty() ? "-" : absl::StrJoin(openers, ", ")});
  }
  std::string text = exports.Render() + "\n" + events.Render();
  if (reply.left_out() > 0) {
    text += absl::StrCat("\n", reply.left_out(), " more exports and events not listed\n");
  }
  return text;
}

// Runs one unary admin call and prints its reply as JSON or as text.
template <typename Request, typename Reply>
grpc::Status Show(grpc::Status (acl::v1::Admin::Stub::*call)(grpc::ClientContext*, const Request&,
                                                             Reply*),
                  acl::v1::Admin::Stub& stub, const Request& request,
                  std::string (*text)(const Reply&)) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  Reply reply;
  grpc::Status status = (stub.*call)(&context, request, &reply);
  if (status.ok()) {
    const std::string out = absl::GetFlag(FLAGS_json) ? aclctl::ToJson(reply) + "\n" : text(reply);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return status;
}

std::string DevicesText(const acl::v1::StatusReply& status) {
  Table devices(
      {"DEVICE", "NAME", "MEMORY", "USED", "UP", "SESSIONS", "COMPUTE", "MEM%", "STATE",
       "HEALTH", "STREAMS/UID", "EVENTS/UID", "NOTIFIES/UID"});
  // "495 of 1981", or the device's number alone when no share is checked.
  auto share = [](uint32_t per_uid, uint32_t device) {
    if (device == 0) return std::string("none");
    return per_uid == 0 ? absl::StrCat("all ", device) : absl::StrCat(per_uid, " of ", device);
  };
  for (const acl::v1::DeviceInfo& device : status.devices()) {
    const std::string compute =
        device.compute_percent() < 0 ? "-" : absl::StrCat(device.compute_percent(), "%");
    devices.AddRow({absl::StrCat(device.id()), device.name(), HumanBytes(device.memory_bytes()),
                    HumanBytes(device.used_bytes()), device.up() ? "yes" : "no",
                    absl::StrCat(device.sessions()), compute,
                    absl::StrCat(device.memory_percent(), "%"),
                    device.disabled() ? "disabled" : "enabled",
                    device.healthy() ? "healthy" : "unhealthy",
                    share(device.streams_per_uid(), device.max_streams()),
                    share(device.events_per_uid(), device.max_events()),
                    share(device.notifies_per_uid(), device.max_notifies())});
  }
  return devices.Render();
}

std::string SessionsText(const acl::v1::SessionsReply& reply) {
  return SessionsTable(reply.sessions());
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "aclctl: %s\n", message.c_str());
  return 1;
}

std::unique_ptr<acl::v1::Admin::Stub> Connect() {
  grpc::ChannelArguments channel_arguments;
  channel_arguments.SetMaxReceiveMessageSize(acld::kMaxMessageBytes);  // many sessions
  return acl::v1::Admin::NewStub(grpc::CreateCustomChannel(
      "unix:" + AdminSocketPath(), grpc::InsecureChannelCredentials(), channel_arguments));
}

// The exit status of `command` whose RPC ended with `rpc`, saying why it failed.
int Finish(const std::string& command, const grpc::Status& rpc) {
  const std::string socket = AdminSocketPath();
  if (rpc.error_code() == grpc::StatusCode::UNAVAILABLE ||
      rpc.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Fail(absl::StrCat("cannot reach acld's admin socket at ", socket, " (",
                             rpc.error_message(),
                             "); is acld running? set --admin_socket or ACLD_ADMIN_ADDRESS"));
  }
  if (rpc.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    return Fail(absl::StrCat("permission denied on ", socket, ": run aclctl as acld's user"));
  }
  if (rpc.error_code() == grpc::StatusCode::INVALID_ARGUMENT && command == "group") {
    std::fprintf(stderr, "aclctl: %s\n", rpc.error_message().c_str());
    return 2;
  }
  if (!rpc.ok()) return Fail(absl::StrCat(command, " failed: ", rpc.error_message()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  acld::HelpListsOwnFlags("tools/aclctl/main.cc");
  std::vector<std::string> labels = aclctl::TakeLabelArguments(argc, argv);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() >= 2 && std::strcmp(args[1], "group") == 0) {
    aclctl::GroupOptions options;
    options.devices = absl::GetFlag(FLAGS_devices);
    options.memory = absl::GetFlag(FLAGS_memory);
    options.streams = absl::GetFlag(FLAGS_streams);
    options.sessions = absl::GetFlag(FLAGS_sessions);
    options.labels = std::move(labels);
    options.json = absl::GetFlag(FLAGS_json);
    return Finish("group", aclctl::RunGroupCommand(*Connect(), {args.begin() + 2, args.end()},
                                                   options));
  }
  if (args.size() < 2 || args.size() > 4) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const std::string command = args[1];
  int32_t target_device = -1;
  if (command == "device" &&
      (args.size() != 4 || (std::strcmp(args[2], "disable") != 0 &&
                            std::strcmp(args[2], "enable") != 0) ||
       !absl::SimpleAtoi(args[3], &target_device))) {
    std::fprintf(stderr, "aclctl: device needs disable or enable, and a device id\n%s", kUsage);
    return 2;
  }
  uint64_t target_session = 0;
  if (command != "device" && args.size() >= 3 && !absl::SimpleAtoi(args[2], &target_session)) {
    std::fprintf(stderr, "aclctl: '%s' is not a session id\n%s", args[2], kUsage);
    return 2;
  }
  uint32_t weight = 0;
  if (command == "weight" && args.size() != 4) {
    std::fprintf(stderr, "aclctl: weight needs SESSION and N\n%s", kUsage);
    return 2;
  }
  if (args.size() == 4 && command == "weight" && !absl::SimpleAtoi(args[3], &weight)) {
    std::fprintf(stderr, "aclctl: '%s' is not a weight (1..1000)\n%s", args[3], kUsage);
    return 2;
  }
  std::unique_ptr<acl::v1::Admin::Stub> stub = Connect();
  using Stub = acl::v1::Admin::Stub;

  grpc::Status rpc;
  if (command == "status") {
    rpc = Show(&Stub::GetStatus, *stub, acl::v1::StatusRequest(), &StatusText);
  } else if (command == "sessions") {
    rpc = Show(&Stub::ListSessions, *stub, acl::v1::SessionsRequest(), &SessionsText);
  } else if (command == "streams") {
    acl::v1::StreamsRequest request;
    request.set_session(absl::GetFlag(FLAGS_session));
    rpc = Show(&Stub::ListStreams, *stub, request, &StreamsText);
  } else if (command == "memory") {
    rpc = Show(&Stub::GetMemory, *stub, acl::v1::MemoryRequest(), &MemoryText);
  } else if (command == "sharing") {
    rpc = Show(&Stub::GetSharing, *stub, acl::v1::SharingRequest(), &SharingText);
  } else if (command == "devices") {
    acl::v1::StatusRequest request;
    request.set_without_sessions(true);
    rpc = Show(&Stub::GetStatus, *stub, request, &DevicesText);
  } else if (command == "watch") {
    const int count = absl::GetFlag(FLAGS_count);
    for (int shown = 0; count == 0 || shown < count; ++shown) {
      if (shown > 0) absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_interval)));
      if (!absl::GetFlag(FLAGS_json)) std::printf("\033[H\033[2J");  // clear the terminal
      rpc = Show(&Stub::GetStatus, *stub, acl::v1::StatusRequest(), &StatusText);
      std::fflush(stdout);
      if (!rpc.ok()) break;
    }
  } else if (command == "evict" && args.size() == 3) {
    acl::v1::EvictRequest request;
    request.set_session(target_session);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    acl::v1::EvictReply reply;
    rpc = stub->Evict(&context, request, &reply);
    if (rpc.ok()) std::printf("session %" PRIu64 " evicted\n", target_session);
  } else if (command == "device") {
    acl::v1::DeviceEnabledRequest request;
    request.set_device(target_device);
    request.set_enabled(std::strcmp(args[2], "enable") == 0);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    acl::v1::DeviceEnabledReply reply;
    rpc = stub->SetDeviceEnabled(&context, request, &reply);
    if (rpc.ok()) std::printf("device %d %sd\n", target_device, args[2]);
  } else if (command == "weight" && args.size() == 4) {
    acl::v1::WeightRequest request;
    request.set_session(target_session);
    request.set_weight(weight);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    acl::v1::WeightReply reply;
    rpc = stub->SetWeight(&context, request, &reply);
    if (rpc.ok()) std::printf("session %" PRIu64 " weight %u\n", target_session, weight);
  } else if (command == "quota" && (args.size() == 3) != absl::GetFlag(FLAGS_default)) {
    acl::v1::QuotaRequest request;
    request.set_session(target_session);
    const std::string memory = absl::GetFlag(FLAGS_memory);
    uint64_t memory_bytes = 0;
    if (!memory.empty() && !absl::SimpleAtoi(memory, &memory_bytes)) {
      std::fprintf(stderr, "aclctl: --memory '%s' is not a number of bytes\n", memory.c_str());
      return 2;
    }
    request.set_set_memory(!memory.empty());
    request.set_memory_bytes(memory_bytes);
    request.set_set_streams(absl::GetFlag(FLAGS_streams) >= 0);
    request.set_max_streams(
        static_cast<uint32_t>(std::max<int64_t>(0, absl::GetFlag(FLAGS_streams))));
    if (!request.set_memory() && !request.set_streams()) {
      std::fprintf(stderr, "aclctl: quota needs --memory and/or --streams\n%s", kUsage);
      return 2;
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    acl::v1::QuotaReply reply;
    rpc = stub->SetQuota(&context, request, &reply);
    if (rpc.ok()) std::printf("quota set\n");
  } else {
    std::fprintf(stderr, "aclctl: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  }
  return Finish(command, rpc);
  return 0;
}
