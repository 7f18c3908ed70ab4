#include "hal/acl/vendor_status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "acl/acl.h"
#include "proto/acl/acl_status.h"

namespace hal::acl {

absl::Status VendorStatus(int32_t code, absl::string_view call) {
  return acld::AclStatus(code, absl::StrCat("vendor ", call, " failed with ", code));
}

absl::Status CheckVendor(int32_t code, absl::string_view call) {
  if (code == ACL_SUCCESS) return absl::OkStatus();
  return VendorStatus(code, call);
}

absl::Status BackendError(int32_t acl_code, absl::string_view message) {
  return acld::AclStatus(acl_code, message);
}

absl::Status WithCanonicalCode(absl::StatusCode code, const absl::Status& status) {
  if (status.ok()) return status;
  absl::Status result(code, status.message());
  status.ForEachPayload([&result](absl::string_view type_url, const absl::Cord& payload) {
    result.SetPayload(type_url, payload);
  });
  return result;
}

bool IsReportTimeout(int32_t code) {
  // CANN's newer code and the older one it replaces.
  return code == ACL_ERROR_RT_REPORT_TIMEOUT || code == ACL_ERROR_WAIT_CALLBACK_TIMEOUT;
}

}  // namespace hal::acl
