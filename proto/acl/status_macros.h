// Early returns on absl::Status, used by both sides of the contract.
#ifndef ACLD_PROTO_ACL_STATUS_MACROS_H_
#define ACLD_PROTO_ACL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` (an absl::Status) is an error.
#define ACL_RETURN_IF_ERROR(expr)              \
  do {                                         \
    absl::Status acl_status_ = (expr);         \
    if (!acl_status_.ok()) return acl_status_; \
  } while (false)

#define ACL_CONCAT_INNER(a, b) a##b
#define ACL_CONCAT(a, b) ACL_CONCAT_INNER(a, b)
// `lhs = value of expr` (an absl::StatusOr), or returns its error.
#define ACL_ASSIGN_OR_RETURN(lhs, expr) \
  ACL_ASSIGN_OR_RETURN_IMPL(ACL_CONCAT(acl_statusor_, __LINE__), lhs, expr)
#define ACL_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = *std::move(statusor)

#endif  // ACLD_PROTO_ACL_STATUS_MACROS_H_
