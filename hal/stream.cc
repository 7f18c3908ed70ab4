#include "hal/stream.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace hal {

absl::Status Stream::NotSupported(const char* what) {
  return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                         absl::StrCat("this device does not ", what));
}

}  // namespace hal
