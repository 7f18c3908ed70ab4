#include "tools/device_plugin/inventory.h"

#include <algorithm>

namespace acld::device_plugin {

int32_t SlicesOf(uint64_t memory_bytes, uint64_t slice_bytes) {
  if (slice_bytes == 0) return 0;
  return static_cast<int32_t>(
      std::min<uint64_t>(memory_bytes / slice_bytes, static_cast<uint64_t>(kMaxSlicesPerDevice)));
}

std::vector<AdvertisedUnit> AdvertisedUnits(const DeviceSelection& selection, ResourceKind kind,
                                            const DeviceSnapshot& snapshot) {
  std::vector<AdvertisedUnit> units;
  for (const auto& [device, known] : snapshot.devices) {
    const bool healthy = snapshot.acld_reachable && known.healthy;
    if (kind == ResourceKind::kWholeDevice) {
      if (selection.IsWhole(device)) units.push_back({UnitId{device, std::nullopt}, healthy});
      continue;
    }
    if (!selection.IsSliced(device)) continue;
    const int32_t slices = SlicesOf(known.memory_bytes, selection.slice_bytes);
    for (int32_t slice = 0; slice < slices; ++slice) {
      units.push_back({UnitId{device, slice}, healthy});
    }
  }
  return units;  // std::map iterates devices in order; slices are appended in order
}

}  // namespace acld::device_plugin
