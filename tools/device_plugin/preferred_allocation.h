// GetPreferredAllocation's choice: a container's memory slices packed onto as
// few devices as possible, so that a process sees all of its memory on one
// device where it fits, and whole devices stay free for others.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_PREFERRED_ALLOCATION_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_PREFERRED_ALLOCATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/device_plugin/device_ids.h"

namespace acld::device_plugin {

// At most this many IDs in one container's request (more than any resource
// advertises: 1,024 devices of at most 1,024 slices would be more, but such
// a request is not a real one and gets INVALID_ARGUMENT).
inline constexpr size_t kMaxIdsPerContainer = 16384;

// Chooses `size` IDs: every one of `must_include`, then from `available`.
// Whole devices: the lowest available ids. Slices: first the devices the
// must-include slices are on, then the device that alone holds what is still
// needed with the fewest slices to spare, else the device with the most
// available slices, again; slices in order within a device. Fewer than
// `size` when `available` has too few (the kubelet then chooses itself).
// INVALID_ARGUMENT: an ID of another kind or malformed, too many IDs, a size
// out of range or below the must-include count.
absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    ResourceKind kind, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int64_t size);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_PREFERRED_ALLOCATION_H_
