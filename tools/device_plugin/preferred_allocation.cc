#include "tools/device_plugin/preferred_allocation.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace acld::device_plugin {
namespace {

absl::StatusOr<std::set<UnitId>> ParseAll(ResourceKind kind, const std::vector<std::string>& ids,
                                          const char* what) {
  if (ids.size() > kMaxIdsPerContainer) {
    return absl::InvalidArgumentError(
        absl::StrCat(ids.size(), " ", what, " IDs (at most ", kMaxIdsPerContainer, ")"));
  }
  std::set<UnitId> units;
  for (const std::string& id : ids) {
    const std::optional<UnitId> unit = ParseUnitId(id, kind);
    if (!unit.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown device ID '", id.substr(0, 64), "' among the ", what, " IDs"));
    }
    units.insert(*unit);
  }
  return units;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    ResourceKind kind, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int64_t size) {
  absl::StatusOr<std::set<UnitId>> free_units = ParseAll(kind, available, "available");
  if (!free_units.ok()) return free_units.status();
  absl::StatusOr<std::set<UnitId>> chosen = ParseAll(kind, must_include, "must-include");
  if (!chosen.ok()) return chosen.status();
  if (size < 0 || size > static_cast<int64_t>(kMaxIdsPerContainer)) {
    return absl::InvalidArgumentError(absl::StrCat("allocation size ", size, " out of range"));
  }
  if (static_cast<int64_t>(chosen->size()) > size) {
    return absl::InvalidArgumentError(absl::StrCat(chosen->size(),
                                                   " must-include IDs exceed the allocation size ",
                                                   size));
  }
  for (const UnitId& unit : *chosen) free_units->erase(unit);

  // Free units per device, in order (std::set orders by device, then slice).
  std::map<int32_t, std::vector<UnitId>> free_by_device;
  for (const UnitId& unit : *free_units) free_by_device[unit.device].push_back(unit);

  auto take = [&](int32_t device) {
    std::vector<UnitId>& units = free_by_device[device];
    size_t taken = 0;
    while (taken < units.size() && static_cast<int64_t>(chosen->size()) < size) {
      chosen->insert(units[taken++]);
    }
    units.erase(units.begin(), units.begin() + taken);
    if (units.empty()) free_by_device.erase(device);
  };

  if (kind == ResourceKind::kMemorySlice) {
    std::set<int32_t> touched;
    for (const UnitId& unit : *chosen) touched.insert(unit.device);
    for (int32_t device : touched) {
      if (free_by_device.count(device) != 0) take(device);
    }
  }
  while (static_cast<int64_t>(chosen->size()) < size && !free_by_device.empty()) {
    const size_t needed = static_cast<size_t>(size) - chosen->size();
    int32_t best = free_by_device.begin()->first;
    if (kind == ResourceKind::kMemorySlice) {
      // Best fit when one device suffices (it keeps larger free blocks whole
      // for later containers), else the largest: both give the fewest devices.
      std::optional<int32_t> fitting;
      int32_t largest = best;
      for (const auto& [device, units] : free_by_device) {
        if (units.size() >= needed &&
            (!fitting.has_value() || units.size() < free_by_device[*fitting].size())) {
          fitting = device;
        }
        if (units.size() > free_by_device[largest].size()) largest = device;
      }
      best = fitting.value_or(largest);
    }
    take(best);
  }

  std::vector<std::string> ids;
  ids.reserve(chosen->size());
  for (const UnitId& unit : *chosen) ids.push_back(FormatUnitId(unit));
  return ids;
}

}  // namespace acld::device_plugin
