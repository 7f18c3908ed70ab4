// Where the text a kernel printed (device printf) goes: the calling process's
// stdout, as CANN prints kernel printf on the host. Written through stdio's
// stdout, so it keeps its place among the program's own printf output.
#ifndef ACLD_CLIENT_KERNEL_OUTPUT_H_
#define ACLD_CLIENT_KERNEL_OUTPUT_H_

#include "absl/strings/string_view.h"

namespace acl_client {

void PrintKernelOutput(absl::string_view text);

}  // namespace acl_client

#endif  // ACLD_CLIENT_KERNEL_OUTPUT_H_
