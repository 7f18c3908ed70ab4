// Carries an exact AscendCL error code (aclError) inside an absl::Status.
//
// The runtime core speaks absl::Status; the C API speaks aclError. The code is
// attached as a payload so that it crosses every boundary (core -> gRPC reply ->
// client, or core -> embedded client) unchanged. This is the one place where
// the two error vocabularies meet.
#ifndef ACLD_PROTO_ACL_ACL_STATUS_H_
#define ACLD_PROTO_ACL_ACL_STATUS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace acld {

// Builds a non-OK status carrying `acl_code` (must be non-zero) and `message`.
absl::Status AclStatus(int32_t acl_code, absl::string_view message);

// The aclError of `status`: 0 when OK, the attached code when present,
// otherwise ACL_ERROR_INTERNAL_ERROR (a status that did not come from AclStatus
// is a bug somewhere, never a user error).
int32_t AclCodeOf(const absl::Status& status);

}  // namespace acld

#endif  // ACLD_PROTO_ACL_ACL_STATUS_H_
