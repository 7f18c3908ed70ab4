// How many streams, events and notifies a vendor device has for acld's
// clients (hal::DeviceObjectLimits), of which each tenant may hold a share
// (--device_share_per_uid).
#ifndef ACLD_HAL_ACL_DEVICE_NUMBERS_H_
#define ACLD_HAL_ACL_DEVICE_NUMBERS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "hal/acl/vendor_api.h"
#include "hal/device.h"

namespace hal::acl {

// The notifies CANN states for the product of SoC `soc` (aclrtGetSocName).
uint32_t NotifiesOfSoc(absl::string_view soc);

// Asked of the vendor while its device is set and acld is its only process.
DeviceObjectLimits ProbeObjectLimits(const VendorApi& api, absl::string_view soc);

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_DEVICE_NUMBERS_H_
