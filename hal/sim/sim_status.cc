#include "hal/sim/sim_status.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {

absl::Status KernelStatus(absl::string_view function, const absl::Status& status) {
  if (status.ok()) return status;
  if (acld::AclCodeOf(status) != ACL_ERROR_INTERNAL_ERROR) return status;
  return acld::AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION,
                         absl::StrCat("kernel ", function, " failed: ", status.message()));
}

absl::Status OutOfDeviceMemory(absl::string_view why) {
  return acld::AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION, why);
}

absl::Status InvalidArgument(absl::string_view what) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat("the sim cannot make ", what));
}

absl::Status DroppedRecord() {
  return acld::AclStatus(ACL_ERROR_RT_IPC_ERROR,
                         "the event record this stream waited for never ran: the process that "
                         "owns the event ended or aborted its stream");
}

absl::Status BadBinary(const absl::Status& parse_error) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("not a sim kernel binary (docs/sim-binary.md): ",
                                      parse_error.message()));
}

}  // namespace hal::sim
