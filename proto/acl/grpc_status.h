// An absl::Status as the gRPC status a service returns: the codes are the
// same numbers (both follow google.rpc.Code). Shared by acld's services and
// the device plugin.
#ifndef ACLD_PROTO_ACL_GRPC_STATUS_H_
#define ACLD_PROTO_ACL_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace acld {

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace acld

#endif  // ACLD_PROTO_ACL_GRPC_STATUS_H_
