// The definition behind the public, opaque aclrtExceptionInfo
// (`typedef struct rtExceptionInfo aclrtExceptionInfo;` in acl/acl_rt.h).
#ifndef ACLD_CLIENT_EXCEPTION_INFO_H_
#define ACLD_CLIENT_EXCEPTION_INFO_H_

#include "client/callback_dispatcher.h"

struct rtExceptionInfo {
  acl_client::TaskFailureFacts facts;
};

#endif  // ACLD_CLIENT_EXCEPTION_INFO_H_
