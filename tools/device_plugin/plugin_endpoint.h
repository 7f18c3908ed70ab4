// One resource's socket in the kubelet's device-plugins directory and its
// registration. The kubelet wipes that directory when it restarts, taking
// the plugin's socket with it; Tick() notices (the socket file gone or
// replaced, or the kubelet's own socket replaced), serves a fresh socket and
// registers again (docs/kubernetes.md, "Kubelet restarts").
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_ENDPOINT_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_ENDPOINT_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "tools/device_plugin/device_plugin_service.h"

namespace acld::device_plugin {

inline constexpr char kDevicePluginApiVersion[] = "v1beta1";

// A file's identity: a re-created file at the same path has another inode.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileIdentity& other) const {
    return device == other.device && inode == other.inode;
  }
};
std::optional<FileIdentity> IdentityOf(const std::string& path);

class PluginEndpoint {
 public:
  // `socket_path`: the plugin's socket for `resource`, in the directory of
  // `kubelet_socket` (the kubelet finds it by its file name).
  PluginEndpoint(ResourceSpec resource, const DeviceSelection& selection, StatusPoller& poller,
                 GroupAllocator& allocator, std::string socket_path, std::string kubelet_socket);
  ~PluginEndpoint();  // Stop()
  PluginEndpoint(const PluginEndpoint&) = delete;
  PluginEndpoint& operator=(const PluginEndpoint&) = delete;

  // One step of the watch; cheap when nothing changed (two stat calls).
  void Tick();
  // Stops serving and removes the socket (when it is still ours).
  void Stop();

  bool registered() const { return registered_; }
  const std::string& socket_path() const { return socket_path_; }

 private:
  absl::Status Serve();
  absl::Status Register();
  void StopServer();

  const ResourceSpec resource_;
  const DeviceSelection selection_;
  StatusPoller& poller_;
  GroupAllocator& allocator_;
  const std::string socket_path_;
  const std::string kubelet_socket_;

  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<FileIdentity> served_socket_;
  std::optional<FileIdentity> registered_with_;  // the kubelet socket Register went to
  bool registered_ = false;
  absl::Time next_register_attempt_ = absl::InfinitePast();
  absl::Duration register_backoff_ = absl::Milliseconds(100);
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_PLUGIN_ENDPOINT_H_
