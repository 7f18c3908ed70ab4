#include "tools/device_plugin/plugin_flags.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace acld::device_plugin {
namespace {

// A DNS subdomain, as Kubernetes wants the prefix of an extended resource
// name; short enough that every label key stays within 63 bytes.
bool IsValidPrefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 40) return false;
  if (prefix.front() == '.' || prefix.front() == '-' || prefix.back() == '.' ||
      prefix.back() == '-') {
    return false;
  }
  for (char c : prefix) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

bool IsCleanMountPath(const std::string& path) {
  if (path.size() < 2 || path.size() > 256 || path[0] != '/' || path.back() == '/') return false;
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  if (normal.string() != path) return false;
  for (char c : path) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<PluginSettings> ValidatePluginSettings(
    const std::string& resource_prefix, const std::string& whole_devices,
    const std::string& sliced_devices, uint64_t slice_bytes, const std::string& container_mount,
    const std::string& kubelet_socket, const PluginIntervals& intervals) {
  if (!IsValidPrefix(resource_prefix)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resource_prefix '", resource_prefix,
        "' is not a DNS subdomain of at most 40 characters (lower case, digits, '-', '.')"));
  }
  if (!IsCleanMountPath(container_mount)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--container_mount '", container_mount, "' is not a normalized absolute path"));
  }
  if (kubelet_socket.empty() || kubelet_socket[0] != '/') {
    return absl::InvalidArgumentError("--kubelet_socket must be an absolute path");
  }
  const absl::Duration floor = absl::Milliseconds(10);
  if (intervals.status < floor || intervals.watch < floor || intervals.reconcile < floor) {
    return absl::InvalidArgumentError(
        "--status_interval, --watch_interval and --reconcile_interval must be at least 10ms");
  }
  if (intervals.retire_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--retire_grace must not be negative");
  }
  absl::StatusOr<DeviceSelection> selection =
      ParseDeviceSelection(whole_devices, sliced_devices, slice_bytes);
  if (!selection.ok()) return selection.status();

  PluginSettings settings;
  settings.resource_prefix = resource_prefix;
  settings.selection = *selection;
  settings.container_mount = container_mount;
  const std::filesystem::path directory = std::filesystem::path(kubelet_socket).parent_path();
  if (selection->AdvertisesWhole()) {
    settings.resources.push_back({{resource_prefix + "/npu", ResourceKind::kWholeDevice},
                                  (directory / "acld-npu.sock").string()});
  }
  if (selection->AdvertisesSlices()) {
    settings.resources.push_back({{resource_prefix + "/npu-memory", ResourceKind::kMemorySlice},
                                  (directory / "acld-npu-memory.sock").string()});
  }
  return settings;
}

}  // namespace acld::device_plugin
