// The acl backend's one error mapping: every failure it returns carries an
// exact ACL code (proto/acl/acl_status.h). A failed vendor call keeps the
// vendor's own code unchanged (the vendor's ABI is CANN's, so its codes are the
// ones applications expect); failures the backend finds itself get the code
// the vendor runtime would have returned in its place.
#ifndef ACLD_HAL_ACL_VENDOR_STATUS_H_
#define ACLD_HAL_ACL_VENDOR_STATUS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hal::acl {

// The status of vendor call `call` that returned `code` (non-zero).
absl::Status VendorStatus(int32_t code, absl::string_view call);

// OkStatus for ACL_SUCCESS, VendorStatus otherwise.
absl::Status CheckVendor(int32_t code, absl::string_view call);

// A failure the backend detected itself, carrying `acl_code`.
absl::Status BackendError(int32_t acl_code, absl::string_view message);

// `status` with its absl code replaced and its ACL code kept (the HAL asks for
// NotFound where the vendor has a code of its own).
absl::Status WithCanonicalCode(absl::StatusCode code, const absl::Status& status);

// True for the codes aclrtProcessReport returns when no report came in time.
bool IsReportTimeout(int32_t code);

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_VENDOR_STATUS_H_
