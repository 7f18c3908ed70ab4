// Which of acld's devices the plugin sells whole and which in memory slices
// (--whole_devices, --sliced_devices, --slice_bytes; docs/kubernetes.md).
// A device is one or the other, never both: sold under both resource names,
// its memory would be given out twice.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_SELECTION_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_SELECTION_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace acld::device_plugin {

// The keyword of --whole_devices for "every device acld reports that
// --sliced_devices does not name".
inline constexpr absl::string_view kOtherDevices = "others";

struct DeviceSelection {
  bool whole_others = false;       // whole: every device not sliced
  std::set<int32_t> whole;         // whole: these (when !whole_others)
  std::set<int32_t> sliced;
  uint64_t slice_bytes = 0;

  bool IsWhole(int32_t device) const {
    return whole_others ? sliced.count(device) == 0 : whole.count(device) != 0;
  }
  bool IsSliced(int32_t device) const { return sliced.count(device) != 0; }
  bool AdvertisesWhole() const { return whole_others || !whole.empty(); }
  bool AdvertisesSlices() const { return !sliced.empty(); }
};

// `whole`: "others", "none", "" (none) or a comma-separated list of device
// ids; `sliced`: "none", "" or such a list. An error names the problem: a
// device listed twice (in one list or in both), an id out of range, slices
// configured with --slice_bytes 0, or nothing to advertise at all.
absl::StatusOr<DeviceSelection> ParseDeviceSelection(absl::string_view whole,
                                                     absl::string_view sliced,
                                                     uint64_t slice_bytes);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_SELECTION_H_
