#include "hal/device.h"

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace hal {

absl::StatusOr<uint64_t> Device::ReserveAddresses(uint64_t, uint64_t) {
  return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         "this device does not manage virtual addresses");
}

}  // namespace hal
