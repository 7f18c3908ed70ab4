// The device IDs the plugin advertises to the kubelet, and their compact form
// in a quota group's labels (docs/kubernetes.md).
//
// A whole NPU is "npu-<device>" under <prefix>/npu; a memory slice is
// "npu-<device>-slice-<n>" under <prefix>/npu-memory. <device> is acld's host
// device id. The kubelet caps an ID at 63 characters; these stay far below.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_IDS_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_IDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace acld::device_plugin {

// Bounds on what acld and the kubelet may tell the plugin: anything past them
// is refused or ignored, never trusted into unbounded work.
inline constexpr int32_t kMaxDeviceId = 1023;
inline constexpr int32_t kMaxSlicesPerDevice = 1024;

enum class ResourceKind { kWholeDevice, kMemorySlice };

// One advertised unit: a whole device (slice unset) or one slice of it.
struct UnitId {
  int32_t device = 0;
  std::optional<int32_t> slice;

  bool operator==(const UnitId& other) const {
    return device == other.device && slice == other.slice;
  }
  bool operator<(const UnitId& other) const {
    if (device != other.device) return device < other.device;
    return slice.value_or(-1) < other.slice.value_or(-1);
  }
};

std::string FormatUnitId(const UnitId& unit);

// Parses an ID of `kind`; nullopt for anything else (another kind, numbers
// out of bounds, leading zeros, trailing text).
std::optional<UnitId> ParseUnitId(absl::string_view text, ResourceKind kind);

// The held units in a group label's form: whole devices as "0,3"; slices per
// device as "<device>:<ranges>" joined by ',', ranges of slice numbers joined
// by '.', as in "0:0-3.7,1:2". Printable ASCII without spaces or '=', as
// acld's labels require. `units` must be of one kind, sorted and unique.
std::string EncodeUnits(const std::vector<UnitId>& units);

// The inverse of EncodeUnits; an error for any malformed text (labels come
// from acld, and anyone with the admin socket may have set them). At most
// `max_units` units are decoded.
absl::StatusOr<std::vector<UnitId>> DecodeUnits(absl::string_view text, ResourceKind kind,
                                                size_t max_units);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_DEVICE_IDS_H_
