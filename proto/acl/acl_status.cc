#include "proto/acl/acl_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace acld {
namespace {

constexpr char kAclCodePayload[] = "acld/acl-error";
constexpr int32_t kInternalError = 500000;  // ACL_ERROR_INTERNAL_ERROR

// The absl code only matters for logs and for gRPC; the payload is authoritative.
absl::StatusCode CanonicalCodeFor(int32_t acl_code) {
  if (acl_code >= 100000 && acl_code < 200000) return absl::StatusCode::kInvalidArgument;
  if (acl_code == 507901) return absl::StatusCode::kUnavailable;
  if (acl_code >= 200000 && acl_code < 300000) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kInternal;
}

}  // namespace

absl::Status AclStatus(int32_t acl_code, absl::string_view message) {
  if (acl_code == 0) acl_code = kInternalError;
  absl::Status status(CanonicalCodeFor(acl_code), message);
  status.SetPayload(kAclCodePayload, absl::Cord(std::to_string(acl_code)));
  return status;
}

int32_t AclCodeOf(const absl::Status& status) {
  if (status.ok()) return 0;
  auto payload = status.GetPayload(kAclCodePayload);
  int32_t code = 0;
  if (payload && absl::SimpleAtoi(std::string(*payload), &code) && code != 0) return code;
  return kInternalError;
}

}  // namespace acld
