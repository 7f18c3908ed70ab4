// The devices one session sees: all of the host's under their own numbers,
// or a quota group's (quota_group.h), renumbered from 0 as a container
// expects. Client device ids cross it once, where requests enter the session
// handler, and host ids cross it back in what goes out.
#ifndef ACLD_DAEMON_CORE_DEVICE_VIEW_H_
#define ACLD_DAEMON_CORE_DEVICE_VIEW_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace acld {

class DeviceView {
 public:
  // Every device of a host with `count` of them.
  static DeviceView Host(int32_t count);
  // `host_devices[i]` is the session's device i.
  static DeviceView Of(std::vector<int32_t> host_devices);

  // How many devices the session sees.
  int32_t count() const;
  // The host's id of the session's `device`. In the host's view every id
  // passes as is (the runtime checks it); in a group's, an id outside it is
  // ACL_ERROR_RT_INVALID_DEVICEID.
  absl::StatusOr<int32_t> ToHost(int32_t device) const;
  // The session's id of host device `device`; none outside the view.
  std::optional<int32_t> ToSession(int32_t device) const;
  // Whether the session sees the host's devices under their own numbers.
  bool is_host() const { return host_count_ >= 0; }

 private:
  DeviceView() = default;
  int32_t host_count_ = -1;            // >= 0: the host's view
  std::vector<int32_t> host_devices_;  // a group's
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_DEVICE_VIEW_H_
