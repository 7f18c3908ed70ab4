// Entry points of the AscendCL API that acld does not implement yet.
//
// Each one fails with ACL_ERROR_API_NOT_SUPPORT (or NULL / 0 where the C
// signature has no error code) and leaves a message for aclGetRecentErrMsg.
// docs/api-compat.md lists them; a later issue replaces each with the real call.
#include <string>

#include "acl/acl.h"
#include "client/error_state.h"
#include "daemon/core/acl_status.h"

namespace {

aclError NotSupported(const char* api) {
  return acl_client::ReportStatus(acld::AclStatus(
      ACL_ERROR_API_NOT_SUPPORT,
      std::string(api) + " is not supported by this version of acld (see docs/api-compat.md)"));
}

}  // namespace

extern "C" {

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
  return NotSupported("aclrtLaunchHostFunc");
}

aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return NotSupported("aclrtSubscribeHostFunc");
}

aclError aclrtProcessHostFunc(int32_t timeout) {
  return NotSupported("aclrtProcessHostFunc");
}

aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return NotSupported("aclrtUnSubscribeHostFunc");
}

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return NotSupported("aclrtSubscribeReport");
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return NotSupported("aclrtUnSubscribeReport");
}

aclError aclrtProcessReport(int32_t timeout) {
  return NotSupported("aclrtProcessReport");
}

aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream) {
  return NotSupported("aclrtLaunchCallback");
}

aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback) {
  return NotSupported("aclrtSetExceptionInfoCallback");
}

uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info) {
  NotSupported("aclrtGetTaskIdFromExceptionInfo");
  return 0;
}

uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info) {
  NotSupported("aclrtGetStreamIdFromExceptionInfo");
  return 0;
}

uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info) {
  NotSupported("aclrtGetThreadIdFromExceptionInfo");
  return 0;
}

uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info) {
  NotSupported("aclrtGetDeviceIdFromExceptionInfo");
  return 0;
}

uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info) {
  NotSupported("aclrtGetErrorCodeFromExceptionInfo");
  return 0;
}

aclError aclrtGetThreadLastTaskId(uint32_t *taskId) {
  return NotSupported("aclrtGetThreadLastTaskId");
}

aclError aclrtGetLastError(aclrtLastErrLevel level) {
  return NotSupported("aclrtGetLastError");
}

aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
  return NotSupported("aclrtPeekAtLastError");
}

}  // extern "C"
