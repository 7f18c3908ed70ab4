// Allocate's work for one resource: each container's device IDs become a
// quota group in acld (devices = the distinct devices of the IDs; memory per
// device = the slices on it times the slice size, or no limit for whole
// devices), and the container gets the group's directory mounted where
// libascendcl looks for acld, and ACLD_ADDRESS naming its socket.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_GROUP_ALLOCATOR_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_GROUP_ALLOCATOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/acl/v1/admin.pb.h"
#include "proto/k8s/deviceplugin/v1beta1/api.pb.h"
#include "tools/device_plugin/admin_client.h"
#include "tools/device_plugin/device_selection.h"
#include "tools/device_plugin/group_labels.h"
#include "tools/device_plugin/inventory.h"

namespace acld::device_plugin {

// At most this many containers in one Allocate (a pod has far fewer).
inline constexpr int kMaxContainersPerRequest = 256;

struct ResourceSpec {
  std::string name;  // e.g. acld.io/npu-memory
  ResourceKind kind = ResourceKind::kWholeDevice;
};

// The group a container's `ids` make: devices in host order, memory per
// device, ownership labels. INVALID_ARGUMENT names an ID that is malformed,
// of the other resource, listed twice, or not advertised now (`advertised`).
absl::StatusOr<acl::v1::CreateGroupRequest> GroupRequestFor(
    const ResourceSpec& resource, const DeviceSelection& selection, const GroupLabels& labels,
    const std::vector<AdvertisedUnit>& advertised, const std::vector<std::string>& ids);

// What the kubelet gives the container for a group acld created: the group's
// directory (checked: an absolute, normalized path) mounted read-only at
// `container_mount`, and ACLD_ADDRESS=unix:<container_mount>/acld.sock.
// Read-only suffices: connecting to a Unix socket needs no write access to the
// mount, and the container cannot replace or remove the sockets.
absl::StatusOr<v1beta1::ContainerAllocateResponse> ContainerResponseFor(
    const acl::v1::GroupInfo& group, const std::string& container_mount);

class GroupAllocator {
 public:
  GroupAllocator(ResourceSpec resource, const DeviceSelection& selection, GroupLabels labels,
                 AdminClient& admin, std::string container_mount);

  // Creates one group per container request, in order. All or nothing: when
  // one fails, the groups made for the others are deleted again.
  // Groups of this resource that hold any of the requested IDs are deleted
  // first: the kubelet hands out only IDs no live container holds, so such a
  // group belongs to a container that is gone (or never started).
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& request, const std::vector<AdvertisedUnit>& advertised);

 private:
  absl::Status RetireGroupsHolding(const std::vector<UnitId>& units);

  const ResourceSpec resource_;
  const DeviceSelection selection_;
  const GroupLabels labels_;
  AdminClient& admin_;
  const std::string container_mount_;
  absl::Mutex mu_;  // one Allocate at a time: retiring and creating must not interleave
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_GROUP_ALLOCATOR_H_
