// The kubelet's DevicePlugin service for one resource name
// (proto/k8s/deviceplugin/v1beta1/api.proto), over the plugin's state:
// acld's devices from the StatusPoller, groups through the GroupAllocator.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_

#include <atomic>

#include "proto/k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "tools/device_plugin/device_selection.h"
#include "tools/device_plugin/group_allocator.h"
#include "tools/device_plugin/status_poller.h"

namespace acld::device_plugin {

inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(ResourceSpec resource, const DeviceSelection& selection,
                      StatusPoller& poller, GroupAllocator& allocator);

  // Ends every ListAndWatch stream within a poll step, so that the server can
  // shut down (the kubelet opens a new stream after re-registering).
  void Stop() { stopping_ = true; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* reply) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* reply) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* reply) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* reply) override;

  // The options Register and GetDevicePluginOptions announce: no
  // PreStartContainer (Allocate does all the work), GetPreferredAllocation yes.
  static v1beta1::DevicePluginOptions Options();

 private:
  std::vector<AdvertisedUnit> Units(const DeviceSnapshot& snapshot) const;

  const ResourceSpec resource_;
  const DeviceSelection selection_;
  StatusPoller& poller_;
  GroupAllocator& allocator_;
  std::atomic<bool> stopping_{false};
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
