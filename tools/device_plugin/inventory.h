// What one resource advertises: its units (whole devices or memory slices)
// and their health, from the plugin's device selection and acld's last
// answer. Health is acld's DeviceInfo.healthy as is (daemon/server/health.h
// defines it once); the plugin never derives its own.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_INVENTORY_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_INVENTORY_H_

#include <cstdint>
#include <map>
#include <vector>

#include "tools/device_plugin/device_ids.h"
#include "tools/device_plugin/device_selection.h"

namespace acld::device_plugin {

// One of acld's devices as the plugin last saw it.
struct KnownDevice {
  uint64_t memory_bytes = 0;
  bool healthy = false;
};

// acld's devices by host id. Devices stay known when acld stops answering
// (then all of them are unhealthy), so the kubelet keeps seeing them.
struct DeviceSnapshot {
  std::map<int32_t, KnownDevice> devices;
  bool acld_reachable = false;
};

struct AdvertisedUnit {
  UnitId unit;
  bool healthy = false;

  bool operator==(const AdvertisedUnit& other) const {
    return unit == other.unit && healthy == other.healthy;
  }
  bool operator!=(const AdvertisedUnit& other) const { return !(*this == other); }
};

// Slices a device of `memory_bytes` is cut into: whole slices only, at most
// kMaxSlicesPerDevice.
int32_t SlicesOf(uint64_t memory_bytes, uint64_t slice_bytes);

// The units `kind` advertises, sorted by device then slice. A slice is
// healthy exactly when its device is.
std::vector<AdvertisedUnit> AdvertisedUnits(const DeviceSelection& selection, ResourceKind kind,
                                            const DeviceSnapshot& snapshot);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_INVENTORY_H_
