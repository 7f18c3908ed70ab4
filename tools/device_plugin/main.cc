// acld_device_plugin: the kubelet's device plugin for acld's NPUs
// (docs/kubernetes.md). Advertises whole devices (<prefix>/npu) and memory
// slices (<prefix>/npu-memory), turns each container's allocation into a
// quota group through acld's admin socket, labels the groups with their
// pods and retires them when the containers are gone. Runs until SIGTERM or
// SIGINT.
#include <signal.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "proto/acl/help_lists_own_flags.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tools/device_plugin/admin_client.h"
#include "tools/device_plugin/device_selection.h"
#include "tools/device_plugin/group_allocator.h"
#include "tools/device_plugin/group_labels.h"
#include "tools/device_plugin/group_reconciler.h"
#include "tools/device_plugin/plugin_endpoint.h"
#include "tools/device_plugin/plugin_flags.h"
#include "tools/device_plugin/status_poller.h"

ABSL_FLAG(std::string, admin_socket, "/run/acld/admin.sock", "acld's admin socket");
ABSL_FLAG(std::string, kubelet_socket, "/var/lib/kubelet/device-plugins/kubelet.sock",
          "the kubelet's registration socket; the plugin's own sockets go in its directory");
ABSL_FLAG(std::string, pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock",
          "the kubelet's PodResources socket (which container holds which device IDs)");
ABSL_FLAG(std::string, resource_prefix, "acld.io",
          "resource names are <prefix>/npu (whole devices) and <prefix>/npu-memory (slices)");
ABSL_FLAG(std::string, whole_devices, "others",
          "devices advertised whole: a comma-separated list of acld device ids, 'none', or "
          "'others' (every device --sliced_devices does not name)");
ABSL_FLAG(std::string, sliced_devices, "",
          "devices advertised as memory slices of --slice_bytes (comma-separated ids); a device "
          "is whole or sliced, never both");
ABSL_FLAG(uint64_t, slice_bytes, 1ull << 30, "bytes of device memory in one <prefix>/npu-memory");
ABSL_FLAG(std::string, container_mount, "/run/acld",
          "where a container sees its group's socket directory (ACLD_ADDRESS points into it)");
ABSL_FLAG(absl::Duration, status_interval, absl::Seconds(1),
          "how often acld's device health is polled for ListAndWatch");
ABSL_FLAG(absl::Duration, watch_interval, absl::Seconds(1),
          "how often the plugin checks that its sockets and the kubelet's are still there");
ABSL_FLAG(absl::Duration, reconcile_interval, absl::Seconds(10),
          "how often groups are matched with the kubelet's containers (labels, retirement)");
ABSL_FLAG(absl::Duration, retire_grace, absl::Seconds(60),
          "a group no container holds is deleted once at least this old");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error, critical or off");

namespace {

using acld::device_plugin::ResourceKind;
using acld::device_plugin::ResourceSpec;

constexpr char kUsage[] =
    "the Kubernetes device plugin for acld's NPUs (docs/kubernetes.md).\n"
    "  acld_device_plugin [--admin_socket=PATH] [--whole_devices=LIST|others|none]\n"
    "                     [--sliced_devices=LIST --slice_bytes=N] [--resource_prefix=P]";

// A bounded loop until `stop`: `step` every `interval`.
template <typename Step>
std::thread Every(absl::Duration interval, absl::Notification& stop, Step step) {
  return std::thread([interval, &stop, step]() mutable {
    do {
      step();
    } while (!stop.WaitForNotificationWithTimeout(interval));
  });
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  acld::HelpListsOwnFlags("tools/device_plugin/main.cc");
  absl::ParseCommandLine(argc, argv);

  auto logger = spdlog::stderr_logger_mt("acld_device_plugin");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));

  const absl::StatusOr<acld::device_plugin::PluginSettings> settings =
      acld::device_plugin::ValidatePluginSettings(
          absl::GetFlag(FLAGS_resource_prefix), absl::GetFlag(FLAGS_whole_devices),
          absl::GetFlag(FLAGS_sliced_devices), absl::GetFlag(FLAGS_slice_bytes),
          absl::GetFlag(FLAGS_container_mount), absl::GetFlag(FLAGS_kubelet_socket),
          {absl::GetFlag(FLAGS_status_interval), absl::GetFlag(FLAGS_watch_interval),
           absl::GetFlag(FLAGS_reconcile_interval), absl::GetFlag(FLAGS_retire_grace)});
  if (!settings.ok()) {
    spdlog::critical("{}", settings.status().ToString());
    return 2;
  }

  // Signals go to sigwait below, not to whichever thread runs.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  acld::device_plugin::AdminClient admin(absl::GetFlag(FLAGS_admin_socket));
  acld::device_plugin::StatusPoller poller(admin, absl::GetFlag(FLAGS_status_interval));
  poller.Start();
  const acld::device_plugin::GroupLabels labels(settings->resource_prefix);

  std::vector<std::unique_ptr<acld::device_plugin::GroupAllocator>> allocators;
  std::vector<std::unique_ptr<acld::device_plugin::PluginEndpoint>> endpoints;
  for (const acld::device_plugin::PluginSettings::Resource& resource : settings->resources) {
    allocators.push_back(std::make_unique<acld::device_plugin::GroupAllocator>(
        resource.spec, settings->selection, labels, admin, settings->container_mount));
    endpoints.push_back(std::make_unique<acld::device_plugin::PluginEndpoint>(
        resource.spec, settings->selection, poller, *allocators.back(), resource.socket_path,
        absl::GetFlag(FLAGS_kubelet_socket)));
  }
  std::vector<ResourceSpec> specs;
  for (const auto& resource : settings->resources) specs.push_back(resource.spec);
  acld::device_plugin::GroupReconciler reconciler(specs, labels, admin,
                                                  absl::GetFlag(FLAGS_pod_resources_socket),
                                                  absl::GetFlag(FLAGS_retire_grace));

  absl::Notification stop;
  std::thread watcher = Every(absl::GetFlag(FLAGS_watch_interval), stop, [&endpoints] {
    for (auto& endpoint : endpoints) endpoint->Tick();
  });
  std::string last_reconcile_error;
  std::thread reconciling =
      Every(absl::GetFlag(FLAGS_reconcile_interval), stop, [&reconciler, &last_reconcile_error] {
        const absl::Status status = reconciler.ReconcileOnce();
        // A kubelet or acld that is down says so once, not every pass.
        const std::string error = status.ok() ? "" : status.ToString();
        if (!error.empty() && error != last_reconcile_error) {
          spdlog::warn("groups not reconciled: {}", error);
        }
        last_reconcile_error = error;
      });

  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("signal {}: stopping", received);
  stop.Notify();
  watcher.join();
  reconciling.join();
  for (auto& endpoint : endpoints) endpoint->Stop();
  return 0;
}
