// aclnnInit / aclnnFinalize. acld ships no operator library, so there is no
// aclnn state to hold: aclnnInit only validates its config as aclInit does.
#include "aclnn/aclnn_base.h"
#include "client/error_state.h"
#include "client/init_config.h"

extern "C" {

aclnnStatus aclnnInit(const char* configPath) {
  absl::StatusOr<acl_client::InitConfig> config = acl_client::ReadInitConfig(configPath);
  if (!config.ok()) {
    acl_client::ReportStatus(config.status());  // keeps the precise message
    return ACLNN_ERR_PARAM_INVALID;
  }
  return ACLNN_SUCCESS;
}

aclnnStatus aclnnFinalize(void) {
  return ACLNN_SUCCESS;  // nothing is held: idempotent, independent of aclFinalize
}

}  // extern "C"
