#include "daemon/core/device_view.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

DeviceView DeviceView::Host(int32_t count) {
  DeviceView view;
  view.host_count_ = count;
  return view;
}

DeviceView DeviceView::Of(std::vector<int32_t> host_devices) {
  DeviceView view;
  view.host_devices_ = std::move(host_devices);
  return view;
}

int32_t DeviceView::count() const {
  return is_host() ? host_count_ : static_cast<int32_t>(host_devices_.size());
}

absl::StatusOr<int32_t> DeviceView::ToHost(int32_t device) const {
  if (is_host()) return device;
  if (device < 0 || device >= count()) {
    return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                     absl::StrCat("device id ", device, " is invalid; this process's quota "
                                  "group has ", count(), " devices (0 to ", count() - 1, ")"));
  }
  return host_devices_[device];
}

std::optional<int32_t> DeviceView::ToSession(int32_t device) const {
  if (is_host()) return device;
  for (size_t i = 0; i < host_devices_.size(); ++i) {
    if (host_devices_[i] == device) return static_cast<int32_t>(i);
  }
  return std::nullopt;
}

}  // namespace acld
