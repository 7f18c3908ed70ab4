#ifndef ACLD_CLIENT_PROCESS_INFO_H_
#define ACLD_CLIENT_PROCESS_INFO_H_

#include <string>

namespace acl_client {

// This process's command line (from /proc/self/cmdline, arguments joined by
// spaces, at most 256 bytes), shown to operators by aclctl.
std::string ProcessCommandLine();

}  // namespace acl_client

#endif  // ACLD_CLIENT_PROCESS_INFO_H_
