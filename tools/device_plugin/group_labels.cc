#include "tools/device_plugin/group_labels.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/device_plugin/preferred_allocation.h"

namespace acld::device_plugin {

bool IsValidLabelText(absl::string_view text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  for (char c : text) {
    if (c <= ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

std::string GroupLabels::DeviceIdsKey(size_t part) const {
  return part == 0 ? prefix_ + "/device-ids" : absl::StrCat(prefix_, "/device-ids.", part);
}

absl::StatusOr<std::map<std::string, std::string>> GroupLabels::ForNewGroup(
    const std::string& resource, const std::vector<UnitId>& units) const {
  const std::string encoded = EncodeUnits(units);
  const size_t parts = (encoded.size() + kMaxLabelValueBytes - 1) / kMaxLabelValueBytes;
  if (parts > kMaxDeviceIdLabels) {
    return absl::ResourceExhaustedError(absl::StrCat(
        units.size(), " device IDs do not fit a group's labels (", encoded.size(), " bytes)"));
  }
  std::map<std::string, std::string> labels;
  labels[ResourceKey()] = resource;
  for (size_t part = 0; part < parts; ++part) {
    labels[DeviceIdsKey(part)] = encoded.substr(part * kMaxLabelValueBytes, kMaxLabelValueBytes);
  }
  return labels;
}

absl::StatusOr<std::optional<std::vector<UnitId>>> GroupLabels::HeldUnits(
    const std::map<std::string, std::string>& labels, const std::string& resource,
    ResourceKind kind) const {
  const auto owner = labels.find(ResourceKey());
  if (owner == labels.end() || owner->second != resource) return std::nullopt;
  std::string encoded;
  for (size_t part = 0; part < kMaxDeviceIdLabels; ++part) {
    const auto value = labels.find(DeviceIdsKey(part));
    if (value == labels.end()) break;
    encoded += value->second;
  }
  absl::StatusOr<std::vector<UnitId>> units = DecodeUnits(encoded, kind, kMaxIdsPerContainer);
  if (!units.ok()) return units.status();
  if (units->empty()) return absl::InvalidArgumentError("a group of the plugin's holds no units");
  return std::optional<std::vector<UnitId>>(*std::move(units));
}

}  // namespace acld::device_plugin
