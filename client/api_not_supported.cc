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

const char * aclrtGetSocName(void) {
  NotSupported("aclrtGetSocName");
  return nullptr;
}

aclError aclrtSynchronizeDevice(void) {
  return NotSupported("aclrtSynchronizeDevice");
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  return NotSupported("aclrtSynchronizeDeviceWithTimeout");
}

aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus) {
  return NotSupported("aclrtQueryDeviceStatus");
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  return NotSupported("aclrtCreateContext");
}

aclError aclrtDestroyContext(aclrtContext context) {
  return NotSupported("aclrtDestroyContext");
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return NotSupported("aclrtSetCurrentContext");
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
  return NotSupported("aclrtGetCurrentContext");
}

aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream) {
  return NotSupported("aclrtCtxGetCurrentDefaultStream");
}

aclError aclrtCreateStream(aclrtStream *stream) {
  return NotSupported("aclrtCreateStream");
}

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
  return NotSupported("aclrtCreateStreamWithConfig");
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return NotSupported("aclrtDestroyStream");
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  return NotSupported("aclrtDestroyStreamForce");
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return NotSupported("aclrtSynchronizeStream");
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  return NotSupported("aclrtSynchronizeStreamWithTimeout");
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
  return NotSupported("aclrtStreamQuery");
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId) {
  return NotSupported("aclrtStreamGetId");
}

aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
  return NotSupported("aclrtSetStreamFailureMode");
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return NotSupported("aclrtStreamWaitEvent");
}

aclError aclrtCreateEvent(aclrtEvent *event) {
  return NotSupported("aclrtCreateEvent");
}

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
  return NotSupported("aclrtCreateEventWithFlag");
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  return NotSupported("aclrtDestroyEvent");
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return NotSupported("aclrtRecordEvent");
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  return NotSupported("aclrtResetEvent");
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return NotSupported("aclrtSynchronizeEvent");
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  return NotSupported("aclrtSynchronizeEventWithTimeout");
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
  return NotSupported("aclrtQueryEvent");
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
  return NotSupported("aclrtQueryEventStatus");
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return NotSupported("aclrtEventElapsedTime");
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return NotSupported("aclrtMalloc");
}

aclError aclrtFree(void *devPtr) {
  return NotSupported("aclrtFree");
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  return NotSupported("aclrtMallocHost");
}

aclError aclrtFreeHost(void *hostPtr) {
  return NotSupported("aclrtFreeHost");
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  return NotSupported("aclrtMemcpy");
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream) {
  return NotSupported("aclrtMemcpyAsync");
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  return NotSupported("aclrtMemset");
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  return NotSupported("aclrtMemsetAsync");
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  return NotSupported("aclrtGetMemInfo");
}

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

aclrtAllocatorDesc aclrtAllocatorCreateDesc(void) {
  NotSupported("aclrtAllocatorCreateDesc");
  return nullptr;
}

aclError aclrtAllocatorDestroyDesc(aclrtAllocatorDesc allocatorDesc) {
  return NotSupported("aclrtAllocatorDestroyDesc");
}

aclError aclrtAllocatorSetObjToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocator allocator) {
  return NotSupported("aclrtAllocatorSetObjToDesc");
}

aclError aclrtAllocatorSetAllocFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocFunc func) {
  return NotSupported("aclrtAllocatorSetAllocFuncToDesc");
}

aclError aclrtAllocatorSetFreeFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorFreeFunc func) {
  return NotSupported("aclrtAllocatorSetFreeFuncToDesc");
}

aclError aclrtAllocatorSetAllocAdviseFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorAllocAdviseFunc func) {
  return NotSupported("aclrtAllocatorSetAllocAdviseFuncToDesc");
}

aclError aclrtAllocatorSetGetAddrFromBlockFuncToDesc(aclrtAllocatorDesc allocatorDesc, aclrtAllocatorGetAddrFromBlockFunc func) {
  return NotSupported("aclrtAllocatorSetGetAddrFromBlockFuncToDesc");
}

aclError aclrtAllocatorRegister(aclrtStream stream, aclrtAllocatorDesc allocatorDesc) {
  return NotSupported("aclrtAllocatorRegister");
}

aclError aclrtAllocatorGetByStream(aclrtStream stream, aclrtAllocatorDesc *allocatorDesc, aclrtAllocator *allocator, aclrtAllocatorAllocFunc *allocFunc, aclrtAllocatorFreeFunc *freeFunc, aclrtAllocatorAllocAdviseFunc *allocAdviseFunc, aclrtAllocatorGetAddrFromBlockFunc *getAddrFromBlockFunc) {
  return NotSupported("aclrtAllocatorGetByStream");
}

aclError aclrtAllocatorUnregister(aclrtStream stream) {
  return NotSupported("aclrtAllocatorUnregister");
}

aclError aclsimLaunchKernel(const char *kernelName, uint32_t blockDim, const void *args, size_t argsSize, aclrtStream stream) {
  return NotSupported("aclsimLaunchKernel");
}

}  // extern "C"
