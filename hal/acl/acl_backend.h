// The pass-through backend for real NPUs: the devices of a vendor AscendCL
// runtime (on an Ascend host, the CANN toolkit's libascendcl.so), driven
// through the HAL. `acld --backend=acl --vendor_library=PATH`.
//
// The vendor library is loaded with dlopen (vendor_api.h); aclInit(nullptr)
// runs once when the backend is created, aclFinalize when it is destroyed.
// The backend must outlive everything it created (streams, events,
// executables, buffers). One acl backend per vendor library and process: a
// second one would find the vendor already initialized and is refused with
// the vendor's ACL_ERROR_REPEAT_INITIALIZE.
#ifndef ACLD_HAL_ACL_ACL_BACKEND_H_
#define ACLD_HAL_ACL_ACL_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hal/backend.h"
#include "hal/backend_options.h"

namespace hal::acl {

// Uses options.vendor_library and options.deep_bind.
absl::StatusOr<std::unique_ptr<Backend>> CreateAclBackend(const BackendOptions& options);

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_BACKEND_H_
