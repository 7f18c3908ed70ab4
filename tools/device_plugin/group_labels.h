// The labels by which a quota group records that the plugin made it, for
// which resource, and which device IDs it holds (docs/kubernetes.md). They
// are all the plugin's state: acld keeps them with the group, so a restarted
// plugin carries on from ListGroups.
//
//   <prefix>/resource     the resource name, e.g. acld.io/npu-memory
//   <prefix>/device-ids   the held units (EncodeUnits), continued in
//                         <prefix>/device-ids.1, .2, ... past 255 bytes
//   pod, namespace, container   attached once the kubelet lists the container
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_GROUP_LABELS_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_GROUP_LABELS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/device_plugin/device_ids.h"

namespace acld::device_plugin {

// acld's rules for a label (proto/acl/v1/admin.proto, CreateGroupRequest).
inline constexpr size_t kMaxLabelKeyBytes = 63;
inline constexpr size_t kMaxLabelValueBytes = 255;
inline constexpr size_t kMaxLabels = 32;
// Continuations of device-ids: the rest of the 32 labels, less the resource,
// pod, namespace and container labels and a margin for an operator's own.
inline constexpr size_t kMaxDeviceIdLabels = 20;

inline constexpr char kPodLabel[] = "pod";
inline constexpr char kNamespaceLabel[] = "namespace";
inline constexpr char kContainerLabel[] = "container";

// What the plugin logs or reports of a group: its public name, the first 8
// digits of its id, as acld logs it (docs/groups.md). The id itself, and the
// directory named after it, let whoever knows them into the group.
inline std::string GroupName(absl::string_view id) { return std::string(id.substr(0, 8)); }

// Printable ASCII without spaces or '=', within `max_bytes`, not empty.
bool IsValidLabelText(absl::string_view text, size_t max_bytes);

class GroupLabels {
 public:
  // `prefix`: --resource_prefix (e.g. acld.io).
  explicit GroupLabels(std::string prefix) : prefix_(std::move(prefix)) {}

  std::string ResourceKey() const { return prefix_ + "/resource"; }
  std::string DeviceIdsKey(size_t part) const;

  // The labels of a new group holding `units` (sorted, unique, one kind) for
  // `resource`; RESOURCE_EXHAUSTED when the units do not fit the labels.
  absl::StatusOr<std::map<std::string, std::string>> ForNewGroup(
      const std::string& resource, const std::vector<UnitId>& units) const;

  // The units a group's labels record, when they say it is `resource`'s;
  // nullopt for another owner's group, an error for malformed labels.
  absl::StatusOr<std::optional<std::vector<UnitId>>> HeldUnits(
      const std::map<std::string, std::string>& labels, const std::string& resource,
      ResourceKind kind) const;

 private:
  std::string prefix_;
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_GROUP_LABELS_H_
