#include "tools/device_plugin/group_allocator.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"
#include "tools/device_plugin/preferred_allocation.h"

namespace acld::device_plugin {
namespace {

constexpr size_t kMaxPathBytes = 4096;

// An absolute path without "." or ".." components, empty components or
// control characters: acld's answer goes into the container's mounts as is.
bool IsCleanAbsolutePath(const std::string& path) {
  if (path.size() < 2 || path.size() > kMaxPathBytes || path[0] != '/') return false;
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  absl::string_view rest = absl::string_view(path).substr(1);
  if (absl::EndsWith(rest, "/")) rest.remove_suffix(1);
  for (absl::string_view part : absl::StrSplit(rest, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<acl::v1::CreateGroupRequest> GroupRequestFor(
    const ResourceSpec& resource, const DeviceSelection& selection, const GroupLabels& labels,
    const std::vector<AdvertisedUnit>& advertised, const std::vector<std::string>& ids) {
  if (ids.empty()) return absl::InvalidArgumentError("a container request without device IDs");
  if (ids.size() > kMaxIdsPerContainer) {
    return absl::InvalidArgumentError(
        absl::StrCat(ids.size(), " device IDs for one container (at most ", kMaxIdsPerContainer,
                     ")"));
  }
  std::set<UnitId> known;
  for (const AdvertisedUnit& unit : advertised) known.insert(unit.unit);
  std::set<UnitId> units;
  for (const std::string& id : ids) {
    const std::optional<UnitId> unit = ParseUnitId(id, resource.kind);
    if (!unit.has_value() || known.count(*unit) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("device ID '", id.substr(0, 64),
                                                     "' is not one that ", resource.name,
                                                     " advertises"));
    }
    if (!units.insert(*unit).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ID '", id, "' is requested twice for one container"));
    }
  }
  std::map<int32_t, uint64_t> slices_per_device;
  for (const UnitId& unit : units) ++slices_per_device[unit.device];

  acl::v1::CreateGroupRequest request;
  for (const auto& [device, slices] : slices_per_device) {
    request.add_devices(device);
    // Whole devices: no memory limit at all (memory_bytes left empty).
    if (resource.kind == ResourceKind::kMemorySlice) {
      request.add_memory_bytes(slices * selection.slice_bytes);
    }
  }
  absl::StatusOr<std::map<std::string, std::string>> group_labels =
      labels.ForNewGroup(resource.name, std::vector<UnitId>(units.begin(), units.end()));
  if (!group_labels.ok()) return group_labels.status();
  for (const auto& [key, value] : *group_labels) (*request.mutable_labels())[key] = value;
  return request;
}

absl::StatusOr<v1beta1::ContainerAllocateResponse> ContainerResponseFor(
    const acl::v1::GroupInfo& group, const std::string& container_mount) {
  if (!IsCleanAbsolutePath(group.directory())) {
    return absl::InternalError(absl::StrCat("acld answered group ", GroupName(group.id()),
                                            " with a directory that is not a clean absolute "
                                            "path"));
  }
  v1beta1::ContainerAllocateResponse response;
  v1beta1::Mount* mount = response.add_mounts();
  mount->set_container_path(container_mount);
  mount->set_host_path(group.directory());
  mount->set_read_only(true);
  (*response.mutable_envs())["ACLD_ADDRESS"] = absl::StrCat("unix:", container_mount, "/acld.sock");
  return response;
}

GroupAllocator::GroupAllocator(ResourceSpec resource, const DeviceSelection& selection,
                               GroupLabels labels, AdminClient& admin,
                               std::string container_mount)
    : resource_(std::move(resource)),
      selection_(selection),
      labels_(std::move(labels)),
      admin_(admin),
      container_mount_(std::move(container_mount)) {}

absl::Status GroupAllocator::RetireGroupsHolding(const std::vector<UnitId>& units) {
  absl::StatusOr<acl::v1::GroupsReply> groups = admin_.ListGroups();
  if (!groups.ok()) return groups.status();
  const std::set<UnitId> wanted(units.begin(), units.end());
  for (const acl::v1::GroupInfo& group : groups->groups()) {
    const std::map<std::string, std::string> group_labels(group.labels().begin(),
                                                          group.labels().end());
    absl::StatusOr<std::optional<std::vector<UnitId>>> held =
        labels_.HeldUnits(group_labels, resource_.name, resource_.kind);
    if (!held.ok() || !held->has_value()) continue;
    const bool overlaps = std::any_of((*held)->begin(), (*held)->end(),
                                      [&wanted](const UnitId& unit) { return wanted.count(unit); });
    if (!overlaps) continue;
    spdlog::info("{}: group {} holds IDs the kubelet now gives another container; deleting it",
                 resource_.name, GroupName(group.id()));
    absl::Status deleted = admin_.DeleteGroup(group.id());
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
  }
  return absl::OkStatus();
}

absl::StatusOr<v1beta1::AllocateResponse> GroupAllocator::Allocate(
    const v1beta1::AllocateRequest& request, const std::vector<AdvertisedUnit>& advertised) {
  if (request.container_requests_size() == 0 ||
      request.container_requests_size() > kMaxContainersPerRequest) {
    return absl::InvalidArgumentError(absl::StrCat(request.container_requests_size(),
                                                   " container requests (1..",
                                                   kMaxContainersPerRequest, ")"));
  }
  // Every request is checked before anything is created.
  std::vector<acl::v1::CreateGroupRequest> creates;
  std::vector<UnitId> all_units;
  std::set<std::string> all_ids;
  for (const v1beta1::ContainerAllocateRequest& container : request.container_requests()) {
    const std::vector<std::string> ids(container.devices_ids().begin(),
                                       container.devices_ids().end());
    absl::StatusOr<acl::v1::CreateGroupRequest> create =
        GroupRequestFor(resource_, selection_, labels_, advertised, ids);
    if (!create.ok()) return create.status();
    for (const std::string& id : ids) {
      if (!all_ids.insert(id).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("device ID '", id, "' is requested for two containers"));
      }
      all_units.push_back(*ParseUnitId(id, resource_.kind));
    }
    creates.push_back(*std::move(create));
  }

  absl::MutexLock lock(&mu_);
  if (absl::Status retired = RetireGroupsHolding(all_units); !retired.ok()) return retired;
  v1beta1::AllocateResponse response;
  std::vector<std::string> created;
  absl::Status failure;
  for (const acl::v1::CreateGroupRequest& create : creates) {
    absl::StatusOr<acl::v1::GroupInfo> group = admin_.CreateGroup(create);
    if (!group.ok()) {
      failure = group.status();
      break;
    }
    created.push_back(group->id());
    absl::StatusOr<v1beta1::ContainerAllocateResponse> container =
        ContainerResponseFor(*group, container_mount_);
    if (!container.ok()) {
      failure = container.status();
      break;
    }
    spdlog::info("{}: group {} for device IDs {}", resource_.name, GroupName(group->id()),
                 create.labels().at(labels_.DeviceIdsKey(0)));
    *response.add_container_responses() = *std::move(container);
  }
  if (failure.ok()) return response;
  for (const std::string& id : created) {
    if (absl::Status deleted = admin_.DeleteGroup(id); !deleted.ok()) {
      spdlog::warn("{}: could not delete group {} of a failed Allocate: {}", resource_.name,
                   GroupName(id),
                   deleted.ToString());
    }
  }
  return failure;
}

}  // namespace acld::device_plugin
