// acld: the per-host AscendCL runtime daemon.
//
// Owns the devices (sim backend by default) and serves client processes on the
// runtime socket and operators on the admin socket until SIGTERM or SIGINT.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/core/runtime.h"
#include "daemon/server/daemon_server.h"
#include "daemon/server/log_file.h"
#include "daemon/server/metrics_exporter.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/segment_budget.h"
#include "daemon/server/service_notifier.h"
#include "daemon/server/uid_owners.h"
#include "hal/registry.h"
#include "proto/acl/help_lists_own_flags.h"
#include "proto/acl/lock_order_checks.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, socket, "/run/acld/acld.sock", "Unix socket path for client processes");
ABSL_FLAG(std::string, admin_socket, "/run/acld/admin.sock",
          "Unix socket path for aclctl (created with mode 0600)");
ABSL_FLAG(std::string, metrics_address, "",
          "serve Prometheus metrics at http://HOST:PORT/metrics (empty: no endpoint; port 0 "
          "picks one, logged); docs/operations.md lists them");
ABSL_FLAG(std::string, metrics_credentials_file, "",
          "a file holding USER:PASSWORD that every scrape of --metrics_address must present "
          "(HTTP basic authentication; in Kubernetes a Secret): the metrics name every NPU pod, "
          "and a network policy cannot keep the pod's own node from its port; empty: no "
          "authentication");
ABSL_FLAG(bool, metrics_per_session, false,
          "also export per-session series (pid and uid labels; their number grows with the "
          "sessions)");
ABSL_FLAG(bool, map_unsealed_client_memory, false,
          "map shared memory that acld cannot seal against hole punching (a libascendcl "
          "before protocol version 5 seals it with F_SEAL_SEAL) as it comes, rather than "
          "filling its holes from the client's own mapping, which needs a userfaultfd and "
          "access to the client's /proc/<pid>/mem: acld's own memory then pays for the pages "
          "it touches in it, for as long as the client keeps the file. Only where every local "
          "user is trusted (docs/security.md)");
ABSL_FLAG(std::string, state_dir, "",
          "directory where acld keeps its quota groups (groups.json; created mode 0700 when "
          "missing), so that they survive restarts; empty: groups last as long as acld "
          "(docs/groups.md)");
ABSL_FLAG(std::string, backend, "sim",
          "the device backend: sim (simulated NPUs) or acl (a vendor AscendCL runtime, "
          "--backend_library)");
ABSL_FLAG(std::string, backend_library, "",
          "--backend=acl: the vendor AscendCL runtime to load (the CANN toolkit's "
          "libascendcl.so)");
ABSL_FLAG(uint64_t, max_binary_bytes_per_session, 256ull << 20,
          "bytes of kernel binaries each session may hold loaded (0: no limit)");
ABSL_FLAG(uint64_t, max_binary_bytes_per_uid, 1ull << 30,
          "bytes of kernel binaries all sessions of one uid (or of one quota group) may hold "
          "loaded together (0: no limit)");
ABSL_FLAG(int32_t, sim_devices, 2, "number of simulated NPU devices");
ABSL_FLAG(uint32_t, sim_device_streams, 0,
          "streams each simulated device has for all processes together, as a real "
          "device's fixed number (0: no fixed number)");
ABSL_FLAG(uint32_t, sim_device_events, 0,
          "events each simulated device has for all processes together (0: no fixed number)");
ABSL_FLAG(uint64_t, sim_device_memory, 4ull << 30,
          "memory of each simulated device in bytes (committed lazily)");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error, critical or off");
ABSL_FLAG(std::string, log_file, "",
          "append logs to this file (a regular file, created 0600; never a symlink) instead of "
          "stderr");
ABSL_FLAG(int32_t, callback_timeout, 60,
          "seconds a stream waits for a client to acknowledge a callback before failing");
ABSL_FLAG(std::string, socket_mode, "0666",
          "octal mode of the runtime socket (and its .peer identity socket)");
ABSL_FLAG(std::string, socket_group, "", "group owning the runtime socket (default: acld's)");
ABSL_FLAG(int32_t, shutdown_grace, 10,
          "seconds SIGTERM waits for queued stream work before ending sessions");
ABSL_FLAG(uint64_t, default_memory_quota, 0,
          "device memory each new session may allocate, in bytes (0: no limit)");
ABSL_FLAG(uint32_t, max_streams_per_session, 4096,
          "streams each new session may hold, default streams included (0: no limit)");
ABSL_FLAG(uint32_t, max_streams_per_uid, 16384,
          "streams all processes of one uid (or quota group) may hold together (0: no limit)");
ABSL_FLAG(uint32_t, max_contexts_per_uid, 4096,
          "contexts all processes of one uid (or quota group) may hold together (0: no limit)");
ABSL_FLAG(uint32_t, max_events_per_uid, 65536,
          "events and notifies all processes of one uid (or quota group) may hold together "
          "(0: no limit)");
ABSL_FLAG(uint32_t, device_share_per_uid, 25,
          "percent (1..100) of a device's streams, of its events and of the notifies the "
          "backend takes for them, that all processes of one uid (or quota group) may hold "
          "together, where the device has a fixed number of them (aclctl devices); 100: the "
          "device's own number only");
ABSL_FLAG(uint32_t, max_contexts_per_session, 1024,
          "contexts each new session may create (0: no limit); the per-device default "
          "contexts, bounded by the device count, are not counted");
ABSL_FLAG(uint32_t, max_events_per_session, 16384,
          "events each new session may hold (0: no limit)");
ABSL_FLAG(uint64_t, max_allocations_per_session, 65536,
          "device memory allocations each session may hold, freed ones still in use by "
          "its tasks included (0: no limit)");
ABSL_FLAG(uint64_t, max_allocations_per_uid, 262144,
          "device memory allocations all sessions of one uid (or of one quota group) may hold "
          "together, as --max_allocations_per_session counts them (0: no limit)");
ABSL_FLAG(uint64_t, max_host_memory_per_session, 16ull << 30,
          "bytes of host shared memory (aclrtMallocHost, staging) each session may map");
ABSL_FLAG(uint64_t, max_host_segments_per_uid, 8192,
          "host shared memory segments acld maps for all sessions of one uid (or of one quota "
          "group) together; each session maps at most 4096 (0: no limit)");
ABSL_FLAG(uint64_t, max_host_segments, 0,
          "host shared memory segments acld maps for all sessions together (0: half of "
          "vm.max_map_count, so that acld can always map its own)");
ABSL_FLAG(int, channel_threads, 0,
          "Threads that serve every session's shared-memory channel (1..64; 0: one per CPU "
          "acld may run on, from 2 to 4); they do not grow with the number of clients");
ABSL_FLAG(uint64_t, max_queued_bytes_per_session, 64ull << 20,
          "bytes of queued work (copies, batches) acld holds for one session (0: no limit)");
ABSL_FLAG(uint64_t, max_queued_bytes_per_uid, 256ull << 20,
          "bytes of queued work acld holds for all sessions of one uid (or of one quota group) "
          "together (0: no limit)");
ABSL_FLAG(uint64_t, max_message_bytes_per_uid, 1ull << 30,
          "bytes of messages acld holds for all sessions of one uid (or quota group) together: "
          "requests arriving in pieces, replies and events their processes have not read; the "
          "session whose message would pass it ends (0: no limit)");
ABSL_FLAG(uint64_t, max_grpc_memory_bytes, 1ull << 30,
          "memory gRPC may take for the runtime sockets' connections: requests it is still "
          "receiving on session streams (the gRPC fallback, older clients), which it keeps "
          "whole before acld sees them (0: no limit)");
ABSL_FLAG(uint64_t, max_grpc_arriving_bytes_per_uid, 64ull << 20,
          "bytes of requests gRPC is still receiving on one uid's connections to one runtime "
          "socket (the host's, or a quota group's) together (each charged its length announced by its prefix, plus 1/8 and 64 KiB for "
          "what its connection sends meanwhile): a request that would pass it waits until the "
          "uid's others have arrived (0: no limit)");
ABSL_FLAG(uint32_t, max_sessions, 1024, "sessions acld serves at once");
ABSL_FLAG(uint32_t, max_sessions_per_uid, 256, "sessions one user may have open at once");
ABSL_FLAG(std::string, subuid_file, "/etc/subuid",
          "subordinate uid ranges (owner:first:count): a uid in one counts as the range's owner "
          "for every per-uid limit; read again when it changes (within 5 s, or at SIGHUP); "
          "empty: every uid counts as itself (docs/security.md)");
ABSL_FLAG(uint32_t, max_sessions_per_group, 64,
          "sessions a quota group may have open at once unless it was created with its own "
          "cap (docs/groups.md)");
ABSL_FLAG(uint32_t, max_pending_hellos, 128,
          "session streams that may wait for their Hello at once");
ABSL_FLAG(uint32_t, max_connections_per_uid, 512,
          "connections one uid may hold open on the runtime socket (and on each quota group's), "
          "a session or not; 0: no limit");
ABSL_FLAG(uint32_t, max_pending_hellos_per_uid, 16,
          "session streams of one uid (or quota group) that may wait for their Hello at once");
ABSL_FLAG(int32_t, hello_timeout, 10,
          "seconds a new connection may take to open its session (Hello); idle connections "
          "without a session are dropped after as long");

namespace {

bool SetUpLogging() {
  const spdlog::level::level_enum level = spdlog::level::from_str(absl::GetFlag(FLAGS_log_level));
  if (level == spdlog::level::off && absl::GetFlag(FLAGS_log_level) != "off") {
    std::fprintf(stderr, "acld: unknown --log_level '%s'\n",
                 absl::GetFlag(FLAGS_log_level).c_str());
    return false;
  }
  std::shared_ptr<spdlog::logger> logger;
  try {
    const std::string& file = absl::GetFlag(FLAGS_log_file);
    if (file.empty()) {
      logger = spdlog::stderr_logger_mt("acld");
    } else {
      absl::StatusOr<std::shared_ptr<spdlog::sinks::sink>> sink =
          acld::server::OpenLogFile(file);
      if (!sink.ok()) {
        std::fprintf(stderr, "acld: %s\n", std::string(sink.status().message()).c_str());
        return false;
      }
      logger = std::make_shared<spdlog::logger>("acld", *std::move(sink));
      spdlog::register_logger(logger);
    }
  } catch (const spdlog::spdlog_ex& error) {
    std::fprintf(stderr, "acld: cannot open log: %s\n", error.what());
    return false;
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return true;
}

// Raises the soft limit on open files to the hard limit: every client costs
// acld a few descriptors.
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t previous = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::info("open file limit raised from {} to {}", previous, limit.rlim_max);
  } else {
    spdlog::warn("cannot raise the open file limit from {}: {}", previous, strerror(errno));
  }
}

// After a stop signal, acld is gone within `limit` whatever clients do.
void StartShutdownWatchdog(absl::Duration limit) {
  std::thread([limit] {
    absl::SleepFor(limit);
    spdlog::critical("shutdown did not finish within {}; exiting now", absl::FormatDuration(limit));
    spdlog::default_logger()->flush();
    _exit(1);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  // glibc gives every thread that allocates an arena of its own (up to 8 per
  // core), and what sessions freed stays in them, fragmented: after a burst of
  // launches an idle acld kept ~6 MiB more than it started with. acld's
  // threads allocate little each; two arenas are enough and give it back.
  mallopt(M_ARENA_MAX, 2);
  acld::MatchLockOrderChecksToBuild();
  absl::SetProgramUsageMessage("acld: per-host AscendCL runtime daemon. Flags: --helpfull");
  acld::HelpListsOwnFlags("daemon/main.cc");
  absl::ParseCommandLine(argc, argv);
  if (!SetUpLogging()) return 2;
  if (absl::GetFlag(FLAGS_sim_devices) < 1 || absl::GetFlag(FLAGS_sim_device_memory) == 0 ||
      absl::GetFlag(FLAGS_callback_timeout) < 1 || absl::GetFlag(FLAGS_shutdown_grace) < 0 ||
      absl::GetFlag(FLAGS_hello_timeout) < 1 || absl::GetFlag(FLAGS_max_sessions) < 1 ||
      absl::GetFlag(FLAGS_max_sessions_per_uid) < 1 ||
      absl::GetFlag(FLAGS_max_sessions_per_group) < 1 ||
      absl::GetFlag(FLAGS_max_pending_hellos) < 1 ||
      absl::GetFlag(FLAGS_max_pending_hellos_per_uid) < 1 ||
      absl::GetFlag(FLAGS_device_share_per_uid) < 1 ||
      absl::GetFlag(FLAGS_device_share_per_uid) > 100) {
    spdlog::critical(
        "--sim_devices, --sim_device_memory, --callback_timeout, --hello_timeout, "
        "--max_sessions, --max_sessions_per_uid, --max_sessions_per_group, "
        "--max_pending_hellos and --max_pending_hellos_per_uid must be positive, "
        "--shutdown_grace not negative, --device_share_per_uid 1..100");
    return 2;
  }
  uint32_t socket_mode = 0;
  if (!absl::numbers_internal::safe_strtou32_base(absl::GetFlag(FLAGS_socket_mode), &socket_mode,
                                                  8) ||
      socket_mode > 0777) {
    spdlog::critical("--socket_mode must be an octal mode such as 0660");
    return 2;
  }

  // Signals are taken synchronously by this thread; every thread gRPC starts
  // inherits the blocked mask.
  sigset_t taken_signals;
  sigemptyset(&taken_signals);
  sigaddset(&taken_signals, SIGTERM);
  sigaddset(&taken_signals, SIGINT);
  sigaddset(&taken_signals, SIGHUP);  // reads --subuid_file again
  pthread_sigmask(SIG_BLOCK, &taken_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  RaiseFileLimit();

  acld::RuntimeOptions runtime_options;
  runtime_options.callback_timeout = absl::Seconds(absl::GetFlag(FLAGS_callback_timeout));
  runtime_options.default_memory_quota = absl::GetFlag(FLAGS_default_memory_quota);
  runtime_options.default_max_streams = absl::GetFlag(FLAGS_max_streams_per_session);
  runtime_options.default_max_contexts = absl::GetFlag(FLAGS_max_contexts_per_session);
  runtime_options.default_max_events = absl::GetFlag(FLAGS_max_events_per_session);
  runtime_options.max_streams_per_uid = absl::GetFlag(FLAGS_max_streams_per_uid);
  runtime_options.max_contexts_per_uid = absl::GetFlag(FLAGS_max_contexts_per_uid);
  runtime_options.max_events_per_uid = absl::GetFlag(FLAGS_max_events_per_uid);
  runtime_options.device_share_per_uid = absl::GetFlag(FLAGS_device_share_per_uid);
  runtime_options.max_allocations_per_session = absl::GetFlag(FLAGS_max_allocations_per_session);
  runtime_options.max_allocations_per_uid = absl::GetFlag(FLAGS_max_allocations_per_uid);
  runtime_options.max_queued_bytes_per_session = absl::GetFlag(FLAGS_max_queued_bytes_per_session);
  runtime_options.max_queued_bytes_per_uid = absl::GetFlag(FLAGS_max_queued_bytes_per_uid);
  runtime_options.readers_await_queue_room = true;
  runtime_options.max_binary_bytes_per_session = absl::GetFlag(FLAGS_max_binary_bytes_per_session);
  runtime_options.max_binary_bytes_per_uid = absl::GetFlag(FLAGS_max_binary_bytes_per_uid);
  hal::BackendOptions backend_options;
  backend_options.sim_device_count = absl::GetFlag(FLAGS_sim_devices);
  backend_options.sim_device_memory_bytes = absl::GetFlag(FLAGS_sim_device_memory);
  backend_options.sim_device_streams = absl::GetFlag(FLAGS_sim_device_streams);
  backend_options.sim_device_events = absl::GetFlag(FLAGS_sim_device_events);
  backend_options.vendor_library = absl::GetFlag(FLAGS_backend_library);
  absl::StatusOr<std::unique_ptr<hal::Backend>> backend =
      hal::CreateBackend(absl::GetFlag(FLAGS_backend), backend_options);
  if (!backend.ok()) {
    spdlog::critical("acld cannot start its devices (--backend={}): {}",
                     absl::GetFlag(FLAGS_backend), std::string(backend.status().message()));
    return 1;
  }
  acld::Runtime runtime(*std::move(backend), runtime_options);
  acld::server::ServerOptions options;
  options.socket_path = absl::GetFlag(FLAGS_socket);
  options.admin_socket_path = absl::GetFlag(FLAGS_admin_socket);
  options.socket_mode = static_cast<mode_t>(socket_mode);
  options.socket_group = absl::GetFlag(FLAGS_socket_group);
  options.shutdown_grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace));
  options.limits.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.limits.max_sessions_per_uid = absl::GetFlag(FLAGS_max_sessions_per_uid);
  options.limits.max_sessions_per_group = absl::GetFlag(FLAGS_max_sessions_per_group);
  options.limits.max_pending_hellos = absl::GetFlag(FLAGS_max_pending_hellos);
  options.limits.max_pending_hellos_per_uid = absl::GetFlag(FLAGS_max_pending_hellos_per_uid);
  options.limits.max_connections_per_uid = absl::GetFlag(FLAGS_max_connections_per_uid);
  options.limits.hello_timeout = absl::Seconds(absl::GetFlag(FLAGS_hello_timeout));
  options.limits.max_host_memory_per_session = absl::GetFlag(FLAGS_max_host_memory_per_session);
  options.limits.max_host_segments_per_uid = absl::GetFlag(FLAGS_max_host_segments_per_uid);
  options.limits.max_host_segments = absl::GetFlag(FLAGS_max_host_segments) != 0
                                         ? absl::GetFlag(FLAGS_max_host_segments)
                                         : acld::server::SegmentBudget::DefaultTotal();
  options.limits.max_queued_bytes_per_session = absl::GetFlag(FLAGS_max_queued_bytes_per_session);
  options.limits.max_message_bytes_per_uid = absl::GetFlag(FLAGS_max_message_bytes_per_uid);
  options.limits.max_grpc_memory_bytes = absl::GetFlag(FLAGS_max_grpc_memory_bytes);
  options.limits.max_grpc_arriving_bytes_per_uid =
      absl::GetFlag(FLAGS_max_grpc_arriving_bytes_per_uid);
  options.limits.channel_threads = std::clamp(absl::GetFlag(FLAGS_channel_threads), 0, 64);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.metrics_per_session = absl::GetFlag(FLAGS_metrics_per_session);
  acld::server::SetAcceptsUnsealableMemory(absl::GetFlag(FLAGS_map_unsealed_client_memory));
  if (const std::string file = absl::GetFlag(FLAGS_metrics_credentials_file); !file.empty()) {
    // Its shape (USER:PASSWORD) is checked as the exporter starts.
    absl::StatusOr<std::string> credentials =
        acld::server::MetricsExporter::ReadCredentials(file);
    if (!credentials.ok()) {
      spdlog::critical("--metrics_credentials_file: {}",
                       std::string(credentials.status().message()));
      return 2;
    }
    options.metrics_credentials = *std::move(credentials);
  }
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  if (!options.state_dir.empty()) {
    // What acld restores from there decides who reaches which devices: only
    // root or acld's user may be able to change it.
    struct stat info {};
    if ((mkdir(options.state_dir.c_str(), 0700) != 0 && errno != EEXIST) ||
        lstat(options.state_dir.c_str(), &info) != 0) {
      spdlog::critical("cannot create --state_dir {}: {}", options.state_dir, strerror(errno));
      return 1;
    }
    if (!S_ISDIR(info.st_mode) || (info.st_uid != 0 && info.st_uid != geteuid()) ||
        (info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      spdlog::critical("--state_dir {} must be a directory of root or acld's user that no one "
                       "else can write (mode 0700)", options.state_dir);
      return 1;
    }
  }
  // Before the first connection: every per-uid count then charges the owner
  // of a subordinate uid from the start.
  const std::string subuid_file = absl::GetFlag(FLAGS_subuid_file);
  acld::server::UidOwnersFile subuids(subuid_file);
  std::optional<acld::server::UidOwnersWatcher> subuids_watcher;
  if (!subuid_file.empty()) {
    subuids.Refresh();
    // Then within 5 s of a change, or at SIGHUP (the user database may answer
    // for names it could not resolve before).
    subuids_watcher.emplace([&subuids](bool force) { subuids.Refresh(force); },
                            absl::Seconds(5));
  }
  auto server = acld::server::DaemonServer::Start(runtime, options);
  if (!server.ok()) {
    spdlog::critical("acld cannot start: {}", server.status().ToString());
    return 1;
  }
  spdlog::info("acld serving clients on {} and aclctl on {}; {} devices of the {} backend",
               options.socket_path, options.admin_socket_path, runtime.DeviceCount(),
               runtime.BackendName());
  // The backend enumerated and probed its devices when it was created (they
  // come up on their first reference), and every socket accepts now.
  acld::server::ServiceNotifier notifier([&] { return (*server)->Health(); });
  if (!notifier.Ready(absl::StrCat("serving ", runtime.DeviceCount(), " devices of the ",
                                   runtime.BackendName(), " backend"))) {
    (*server)->Shutdown();
    return 1;
  }

  int signal_number = 0;
  while (signal_number != SIGTERM && signal_number != SIGINT) {
    signal_number = sigwaitinfo(&taken_signals, nullptr);
    if (signal_number == SIGHUP && subuids_watcher.has_value()) subuids_watcher->ReadNow();
  }
  spdlog::info("received {}; ending sessions and shutting down", strsignal(signal_number));
  notifier.Stopping();
  // The grace drains queued work; ending sessions and closing take at most
  // about a second more. Past that, something is stuck: leave anyway.
  StartShutdownWatchdog(options.shutdown_grace + absl::Seconds(2));
  (*server)->Shutdown();
  server->reset();
  spdlog::info("acld stopped");
  return 0;
}
