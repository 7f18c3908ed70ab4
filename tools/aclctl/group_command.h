// aclctl group ...: quota groups (docs/groups.md) over the admin socket.
#ifndef ACLD_TOOLS_ACLCTL_GROUP_COMMAND_H_
#define ACLD_TOOLS_ACLCTL_GROUP_COMMAND_H_

#include <string>
#include <vector>

#include "grpcpp/support/status.h"
#include "proto/acl/v1/admin.grpc.pb.h"

namespace aclctl {

struct GroupOptions {
  std::string devices;            // --devices: host device ids, comma-separated
  std::string memory;             // --memory: bytes, one value or one per device
  int64_t streams = -1;           // --streams (-1: not given)
  int64_t sessions = -1;          // --sessions (-1: not given)
  std::vector<std::string> labels;  // --label key=value, in the order given
  bool json = false;
};

// Takes every `--label X` and `--label=X` out of argv (their number varies,
// which flags of one value cannot carry) and returns the X's; a missing
// value is returned as "".
std::vector<std::string> TakeLabelArguments(int& argc, char** argv);

// `words` follow "group": create | list | show ID | delete ID |
// label ID key=value... key-... . Returns the RPC's status; a usage error is
// INVALID_ARGUMENT with the message to print.
grpc::Status RunGroupCommand(acl::v1::Admin::Stub& stub, const std::vector<std::string>& words,
                             const GroupOptions& options);

}  // namespace aclctl

#endif  // ACLD_TOOLS_ACLCTL_GROUP_COMMAND_H_
