// The plugin's command line, checked as a whole before anything starts: a
// bad resource prefix, a device named twice, a mount path that is not clean,
// or intervals that would spin are refused with a message naming the flag.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_FLAGS_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/device_plugin/device_selection.h"
#include "tools/device_plugin/group_allocator.h"

namespace acld::device_plugin {

struct PluginIntervals {
  absl::Duration status, watch, reconcile, retire_grace;
};

struct PluginSettings {
  struct Resource {
    ResourceSpec spec;
    std::string socket_path;  // in the kubelet socket's directory
  };
  std::string resource_prefix;
  DeviceSelection selection;
  std::string container_mount;
  std::vector<Resource> resources;  // those with devices configured
};

// Resource names are <prefix>/npu and <prefix>/npu-memory; their sockets
// <dir of kubelet_socket>/acld-npu.sock and acld-npu-memory.sock.
absl::StatusOr<PluginSettings> ValidatePluginSettings(
    const std::string& resource_prefix, const std::string& whole_devices,
    const std::string& sliced_devices, uint64_t slice_bytes, const std::string& container_mount,
    const std::string& kubelet_socket, const PluginIntervals& intervals);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_FLAGS_H_
