#include "tools/device_plugin/group_reconciler.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "spdlog/spdlog.h"
#include "tools/device_plugin/preferred_allocation.h"

namespace acld::device_plugin {
namespace {

constexpr absl::Duration kListTimeout = absl::Seconds(5);
// A node's pods with every container and device: megabytes at most.
constexpr int kMaxPodResourcesBytes = 32 << 20;
constexpr int kMaxPods = 4096;
constexpr int kMaxContainersPerPod = 1024;

struct ContainerName {
  std::string pod, namespace_, container;
};

}  // namespace

ReconcileActions PlanReconcile(const std::vector<ResourceSpec>& resources,
                               const GroupLabels& labels, const acl::v1::GroupsReply& groups,
                               const v1::ListPodResourcesResponse& pods, absl::Time now,
                               absl::Duration grace,
                               const std::map<std::string, absl::Time>& unlisted_since) {
  // Per resource: each container's set of units, and every unit held.
  std::map<std::string, std::map<std::set<UnitId>, ContainerName>> holder_of;
  std::map<std::string, std::set<UnitId>> held;
  // A list read only in part may leave out what holds a group: nothing is
  // retired on it.
  bool cut_short = pods.pod_resources_size() > kMaxPods;
  int pod_count = 0;
  for (const v1::PodResources& pod : pods.pod_resources()) {
    if (++pod_count > kMaxPods) break;
    cut_short |= pod.containers_size() > kMaxContainersPerPod;
    int container_count = 0;
    for (const v1::ContainerResources& container : pod.containers()) {
      if (++container_count > kMaxContainersPerPod) break;
      for (const v1::ContainerDevices& devices : container.devices()) {
        const auto resource =
            std::find_if(resources.begin(), resources.end(), [&](const ResourceSpec& spec) {
              return spec.name == devices.resource_name();
            });
        if (resource == resources.end()) continue;
        std::set<UnitId> units;
        cut_short |= devices.device_ids_size() > static_cast<int>(kMaxIdsPerContainer);
        for (const std::string& id : devices.device_ids()) {
          if (units.size() >= kMaxIdsPerContainer) break;
          if (std::optional<UnitId> unit = ParseUnitId(id, resource->kind); unit.has_value()) {
            units.insert(*unit);
          }
        }
        held[resource->name].insert(units.begin(), units.end());
        holder_of[resource->name][units] =
            ContainerName{pod.name(), pod.namespace_(), container.name()};
      }
    }
  }

  ReconcileActions actions;
  for (const acl::v1::GroupInfo& group : groups.groups()) {
    const std::map<std::string, std::string> group_labels(group.labels().begin(),
                                                          group.labels().end());
    for (const ResourceSpec& resource : resources) {
      absl::StatusOr<std::optional<std::vector<UnitId>>> units =
          labels.HeldUnits(group_labels, resource.name, resource.kind);
      if (!units.ok()) {
        spdlog::warn("group {}: {}; left alone", GroupName(group.id()),
                     units.status().ToString());
        continue;
      }
      if (!units->has_value()) continue;
      const std::set<UnitId> unit_set((*units)->begin(), (*units)->end());
      const auto& holders = holder_of[resource.name];
      if (const auto holder = holders.find(unit_set); holder != holders.end()) {
        const ContainerName& name = holder->second;
        auto differs = [&group_labels](const char* key, const std::string& value) {
          const auto it = group_labels.find(key);
          return it == group_labels.end() || it->second != value;
        };
        if (IsValidLabelText(name.pod, kMaxLabelValueBytes) &&
            IsValidLabelText(name.namespace_, kMaxLabelValueBytes) &&
            IsValidLabelText(name.container, kMaxLabelValueBytes) &&
            (differs(kPodLabel, name.pod) || differs(kNamespaceLabel, name.namespace_) ||
             differs(kContainerLabel, name.container))) {
          actions.labels.push_back({group.id(), name.pod, name.namespace_, name.container});
        }
        continue;
      }
      const std::set<UnitId>& in_use = held[resource.name];
      const bool any_held = std::any_of(unit_set.begin(), unit_set.end(),
                                        [&in_use](const UnitId& unit) {
                                          return in_use.count(unit) != 0;
                                        });
      if (any_held) continue;
      const auto before = unlisted_since.find(group.id());
      const absl::Time since = before != unlisted_since.end() ? before->second : now;
      actions.unlisted_since[group.id()] = since;
      const absl::Time created = absl::FromUnixSeconds(group.created_unix_seconds());
      if (!cut_short && now - since >= grace && now - created >= grace) {
        actions.retire.push_back(group.id());
      }
    }
  }
  return actions;
}

GroupReconciler::GroupReconciler(std::vector<ResourceSpec> resources, GroupLabels labels,
                                 AdminClient& admin, std::string pod_resources_socket,
                                 absl::Duration grace)
    : resources_(std::move(resources)), labels_(std::move(labels)), admin_(admin), grace_(grace) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxPodResourcesBytes);
  pods_ = v1::PodResourcesLister::NewStub(grpc::CreateCustomChannel(
      "unix:" + pod_resources_socket, grpc::InsecureChannelCredentials(), arguments));
}

absl::StatusOr<v1::ListPodResourcesResponse> GroupReconciler::ListPods() {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kListTimeout));
  v1::ListPodResourcesResponse reply;
  const grpc::Status status = pods_->List(&context, v1::ListPodResourcesRequest(), &reply);
  if (!status.ok()) return FromGrpc(status, "kubelet PodResources List");
  return reply;
}

absl::Status GroupReconciler::ReconcileOnce() {
  absl::StatusOr<v1::ListPodResourcesResponse> pods = ListPods();
  if (!pods.ok()) return pods.status();
  absl::StatusOr<acl::v1::GroupsReply> groups = admin_.ListGroups();
  if (!groups.ok()) return groups.status();
  ReconcileActions actions =
      PlanReconcile(resources_, labels_, *groups, *pods, absl::Now(), grace_, unlisted_since_);
  unlisted_since_ = std::move(actions.unlisted_since);
  absl::Status first_error;
  for (const ReconcileActions::Label& label : actions.labels) {
    acl::v1::LabelGroupRequest request;
    request.set_id(label.group);
    (*request.mutable_set())[kPodLabel] = label.pod;
    (*request.mutable_set())[kNamespaceLabel] = label.namespace_;
    (*request.mutable_set())[kContainerLabel] = label.container;
    absl::StatusOr<acl::v1::GroupInfo> labelled = admin_.LabelGroup(request);
    if (!labelled.ok()) {
      first_error.Update(labelled.status());
      continue;
    }
    spdlog::info("group {} is {}/{} container {}", GroupName(label.group), label.namespace_,
                 label.pod, label.container);
  }
  for (const std::string& id : actions.retire) {
    absl::Status deleted = admin_.DeleteGroup(id);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) {
      first_error.Update(deleted);
      continue;
    }
    spdlog::info("group {}: no container holds its devices any more; deleted", GroupName(id));
  }
  return first_error;
}

}  // namespace acld::device_plugin
