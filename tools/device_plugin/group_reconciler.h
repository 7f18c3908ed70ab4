// Keeps the plugin's quota groups in step with the kubelet's containers,
// from the PodResources API (List): a group whose device IDs are exactly a
// container's gets that container's pod, namespace and container labels;
// a group none of whose IDs any container holds any more is retired
// (DeleteGroup) once it is older than the grace period (Allocate runs before
// the kubelet lists the container). Everything it needs is in acld's group
// labels, so a restarted plugin picks up where the last one stopped.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_GROUP_RECONCILER_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_GROUP_RECONCILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/acl/v1/admin.pb.h"
#include "proto/k8s/podresources/v1/api.grpc.pb.h"
#include "tools/device_plugin/admin_client.h"
#include "tools/device_plugin/group_allocator.h"
#include "tools/device_plugin/group_labels.h"

namespace acld::device_plugin {

// What one pass decided, for the log and the tests.
struct ReconcileActions {
  struct Label {
    std::string group;
    std::string pod, namespace_, container;
  };
  std::vector<Label> labels;
  std::vector<std::string> retire;  // group ids
  // Since when each group no container holds has not been held (the next
  // pass's `unlisted_since`).
  std::map<std::string, absl::Time> unlisted_since;
};

// The decisions for acld's `groups` given the kubelet's `pods`, at `now`.
// A group is retired once no container has held its units for `grace`
// (by `unlisted_since`, what the previous pass returned) and it is older
// than `grace`: one answer that leaves it out (a kubelet that restarted, a
// list cut short) retires nothing. Pure: the caller carries them out.
ReconcileActions PlanReconcile(const std::vector<ResourceSpec>& resources,
                               const GroupLabels& labels, const acl::v1::GroupsReply& groups,
                               const v1::ListPodResourcesResponse& pods, absl::Time now,
                               absl::Duration grace,
                               const std::map<std::string, absl::Time>& unlisted_since = {});

class GroupReconciler {
 public:
  GroupReconciler(std::vector<ResourceSpec> resources, GroupLabels labels, AdminClient& admin,
                  std::string pod_resources_socket, absl::Duration grace);

  // One pass: List, ListGroups, then the labels and deletions. Nothing is
  // deleted when either list fails.
  absl::Status ReconcileOnce();

 private:
  absl::StatusOr<v1::ListPodResourcesResponse> ListPods();

  const std::vector<ResourceSpec> resources_;
  const GroupLabels labels_;
  AdminClient& admin_;
  std::unique_ptr<v1::PodResourcesLister::Stub> pods_;
  const absl::Duration grace_;
  std::map<std::string, absl::Time> unlisted_since_;  // ReconcileActions::unlisted_since
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_GROUP_RECONCILER_H_
