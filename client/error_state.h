// aclGetRecentErrMsg's storage: the latest error message, per thread or (with
// err_msg_mode "1" in the aclInit config) per process.
#ifndef ACLD_CLIENT_ERROR_STATE_H_
#define ACLD_CLIENT_ERROR_STATE_H_

#include "absl/status/status.h"
#include "acl/acl_base.h"

namespace acl_client {

// Switches between thread-level (false, the default) and process-level messages.
void SetProcessLevelErrorMessages(bool process_level);

// Remembers `status`'s message (when not OK) and returns its aclError. Every C
// entry point returns through this, so every failure leaves a message.
aclError ReportStatus(const absl::Status& status);

// aclrtGetLastError / aclrtPeekAtLastError: the calling thread's latest error
// code (ACL_SUCCESS when none); Take also forgets it.
aclError TakeLastError();
aclError PeekLastError();

// The latest message for the caller (thread or process), then forgets it: a
// second call without a new error returns NULL. The pointer stays valid until
// the calling thread's next call of this function.
const char* TakeRecentErrorMessage();

}  // namespace acl_client

#endif  // ACLD_CLIENT_ERROR_STATE_H_
