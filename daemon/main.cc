// acld: the per-host AscendCL runtime daemon.
//
// Owns the devices (sim backend by default) and serves client processes on the
// runtime socket and operators on the admin socket until SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "daemon/core/runtime.h"
#include "daemon/server/daemon_server.h"
#include "hal/sim/sim_backend.h"
#include "spdlog/sinks/basic_file_sink.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, socket, "/run/acld/acld.sock", "Unix socket path for client processes");
ABSL_FLAG(std::string, admin_socket, "/run/acld/admin.sock",
          "Unix socket path for aclctl (created with mode 0600)");
ABSL_FLAG(int32_t, sim_devices, 2, "number of simulated NPU devices");
ABSL_FLAG(uint64_t, sim_device_memory, 4ull << 30,
          "memory of each simulated device in bytes (committed lazily)");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error, critical or off");
ABSL_FLAG(std::string, log_file, "", "append logs to this file instead of stderr");
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
    logger = file.empty() ? spdlog::stderr_logger_mt("acld")
                          : spdlog::basic_logger_mt("acld", file, /*truncate=*/false);
  } catch (const spdlog::spdlog_ex& error) {
    std::fprintf(stderr, "acld: cannot open log: %s\n", error.what());
    return false;
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("acld: per-host AscendCL runtime daemon. Flags: --helpfull");
  absl::ParseCommandLine(argc, argv);
  if (!SetUpLogging()) return 2;
  if (absl::GetFlag(FLAGS_sim_devices) < 1 || absl::GetFlag(FLAGS_sim_device_memory) == 0 ||
      absl::GetFlag(FLAGS_callback_timeout) < 1 || absl::GetFlag(FLAGS_shutdown_grace) < 0) {
    spdlog::critical(
        "--sim_devices, --sim_device_memory and --callback_timeout must be positive, "
        "--shutdown_grace not negative");
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
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  acld::RuntimeOptions runtime_options;
  runtime_options.callback_timeout = absl::Seconds(absl::GetFlag(FLAGS_callback_timeout));
  runtime_options.default_memory_quota = absl::GetFlag(FLAGS_default_memory_quota);
  runtime_options.default_max_streams = absl::GetFlag(FLAGS_max_streams_per_session);
  acld::Runtime runtime(hal::sim::CreateSimBackend({absl::GetFlag(FLAGS_sim_devices),
                                                    absl::GetFlag(FLAGS_sim_device_memory)}),
                        runtime_options);
  acld::server::ServerOptions options;
  options.socket_path = absl::GetFlag(FLAGS_socket);
  options.admin_socket_path = absl::GetFlag(FLAGS_admin_socket);
  options.socket_mode = static_cast<mode_t>(socket_mode);
  options.socket_group = absl::GetFlag(FLAGS_socket_group);
  options.shutdown_grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace));
  auto server = acld::server::DaemonServer::Start(runtime, options);
  if (!server.ok()) {
    spdlog::critical("acld cannot start: {}", server.status().ToString());
    return 1;
  }
  spdlog::info("acld serving clients on {} and aclctl on {}; {} sim devices of {} bytes",
               options.socket_path, options.admin_socket_path, runtime.DeviceCount(),
               absl::GetFlag(FLAGS_sim_device_memory));

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info("received {}; ending sessions and shutting down", strsignal(signal_number));
  (*server)->Shutdown();
  server->reset();
  spdlog::info("acld stopped");
  return 0;
}
