#include "hal/acl/vendor_copy.h"

#include "hal/acl/vendor_status.h"

namespace hal::acl {

absl::StatusOr<VendorCopy> ToVendorCopy(const Transfer& transfer) {
  const bool device_dst = transfer.device_dst.has_value();
  const bool device_src = transfer.device_src.has_value();
  const bool host_dst = transfer.host_dst != nullptr;
  const bool host_src = transfer.host_src != nullptr;
  if (device_dst == host_dst || device_src == host_src) {
    return BackendError(ACL_ERROR_INVALID_PARAM,
                        "a copy needs exactly one source and one destination");
  }
  VendorCopy copy;
  copy.count = static_cast<size_t>(transfer.count);
  if (device_dst) {
    copy.dst = VendorPointer(*transfer.device_dst);
    copy.dst_max = BytesAfter(*transfer.device_dst);
  } else {
    copy.dst = transfer.host_dst;
    copy.dst_max = copy.count;
  }
  copy.src = device_src ? VendorPointer(*transfer.device_src) : transfer.host_src;
  if (device_dst && device_src) {
    copy.kind = ACL_MEMCPY_DEVICE_TO_DEVICE;
  } else if (device_dst) {
    copy.kind = ACL_MEMCPY_HOST_TO_DEVICE;
  } else if (device_src) {
    copy.kind = ACL_MEMCPY_DEVICE_TO_HOST;
  } else {
    copy.kind = ACL_MEMCPY_HOST_TO_HOST;
  }
  return copy;
}

}  // namespace hal::acl
