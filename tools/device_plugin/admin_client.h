// acld's admin service (proto/acl/v1/admin.proto) as the plugin calls it:
// every call has a deadline and replies are size-bounded, so a stuck or
// hostile peer on the admin socket cannot hold the plugin or make it buffer
// without limit.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_ADMIN_CLIENT_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_ADMIN_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/acl/v1/admin.grpc.pb.h"

namespace acld::device_plugin {

class AdminClient {
 public:
  // `address`: "unix:PATH" or a bare path.
  explicit AdminClient(const std::string& address, absl::Duration timeout = absl::Seconds(5));

  absl::StatusOr<acl::v1::StatusReply> GetStatus();
  absl::StatusOr<acl::v1::GroupInfo> CreateGroup(const acl::v1::CreateGroupRequest& request);
  absl::StatusOr<acl::v1::GroupsReply> ListGroups();
  absl::Status DeleteGroup(const std::string& id);
  absl::StatusOr<acl::v1::GroupInfo> LabelGroup(const acl::v1::LabelGroupRequest& request);

 private:
  std::unique_ptr<grpc::ClientContext> NewContext() const;

  absl::Duration timeout_;
  std::unique_ptr<acl::v1::Admin::Stub> stub_;
};

// gRPC's status as Abseil's, the message prefixed with what was called.
absl::Status FromGrpc(const grpc::Status& status, const std::string& what);

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_ADMIN_CLIENT_H_
