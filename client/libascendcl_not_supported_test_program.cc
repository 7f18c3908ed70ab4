// A CANN-style program for libascendcl_not_supported_test.sh: compiled with
// nothing but our headers and -lascendcl, run with ACLD_ADDRESS=embedded. It
// calls every function of client/api_not_supported.cc with NULL and zero
// arguments ({} each) and checks that the call returns
// ACL_ERROR_API_NOT_SUPPORT (NULL for a handle), makes it the thread's last
// error and leaves "<function>: <reason>" for aclGetRecentErrMsg. It prints
// "not-supported <function>" for each one that passed; the script compares
// that list with the functions api_not_supported.cc defines.
#include <cctype>
#include <cstdio>
#include <string>

#include "acl/acl.h"

// Some are deprecated, as in CANN; they are called all the same.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

int failures = 0;

// True when `message` holds "<name>: " (name as a whole word) and a reason after it.
bool NamesFunction(const std::string& message, const std::string& name) {
  const std::string key = name + ": ";
  for (size_t at = message.find(key); at != std::string::npos; at = message.find(key, at + 1)) {
    const bool word_start =
        at == 0 ||
        !(std::isalnum(static_cast<unsigned char>(message[at - 1])) || message[at - 1] == '_');
    if (word_start && message.size() > at + key.size()) return true;
  }
  return false;
}

// Drops what earlier calls left: the message and the last error.
void Forget() {
  aclGetRecentErrMsg();
  aclrtGetLastError(ACL_RT_THREAD_LEVEL);
}

// `call` is the call's text ("name(...)"); `returned` is empty when the call
// returned what an unsupported function returns, else what it returned.
void Check(const std::string& call, const std::string& returned) {
  const std::string name = call.substr(0, call.find('('));
  const char* message = aclGetRecentErrMsg();
  const aclError last = aclrtGetLastError(ACL_RT_THREAD_LEVEL);
  std::string problem;
  if (!returned.empty()) {
    problem = "returned " + returned;
  } else if (last != ACL_ERROR_API_NOT_SUPPORT) {
    problem = "the last error is " + std::to_string(last);
  } else if (message == nullptr) {
    problem = "no message for aclGetRecentErrMsg";
  } else if (!NamesFunction(message, name)) {
    problem = std::string("the message does not name it: ") + message;
  }
  if (problem.empty()) {
    std::printf("not-supported %s\n", name.c_str());
  } else {
    ++failures;
    std::printf("FAIL %s: %s\n", name.c_str(), problem.c_str());
  }
}

std::string UnlessNotSupported(aclError result) {
  return result == ACL_ERROR_API_NOT_SUPPORT ? "" : std::to_string(result);
}

std::string UnlessNull(const void* result) { return result == nullptr ? "" : "a handle, not NULL"; }

const char* LatestMessage() {
  const char* message = aclGetRecentErrMsg();
  return message != nullptr ? message : "(no message)";
}

}  // namespace

#define EXPECT_NOT_SUPPORTED(call) Check(#call, UnlessNotSupported((Forget(), call)))
#define EXPECT_NULL_NOT_SUPPORTED(call) Check(#call, UnlessNull((Forget(), call)))

int main() {
  // A session, a device and its context, as a real program has them.
  if (aclInit(nullptr) != ACL_SUCCESS) {
    std::printf("FAIL aclInit: %s\n", LatestMessage());
    return 1;
  }
  if (aclrtSetDevice(0) != ACL_SUCCESS) {
    std::printf("FAIL aclrtSetDevice: %s\n", LatestMessage());
    return 1;
  }

  // Models: capture, build, run and inspect model runtime instances
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureBegin({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureToModelRIBegin({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureGetInfo({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureEnd({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureThreadExchangeMode({}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureTaskGrpBegin({}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureTaskGrpEnd({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureTaskUpdateBegin({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICaptureTaskUpdateEnd({}));
  EXPECT_NOT_SUPPORTED(aclmdlRIBuildBegin({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIBindStream({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIEndTask({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIBuildEnd({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIUnbindStream({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIExecute({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIExecuteAsync({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIAbort({}));
  EXPECT_NOT_SUPPORTED(aclmdlRIUpdate({}));
  EXPECT_NOT_SUPPORTED(aclmdlRIDestroy({}));
  EXPECT_NOT_SUPPORTED(aclmdlRIDestroyRegisterCallback({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIDestroyUnregisterCallback({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRISetName({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIGetName({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIGetId({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIDebugPrint({}));
  EXPECT_NOT_SUPPORTED(aclmdlRIDebugJsonPrint({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIGetStreams({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIGetTasksByStream({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRITaskGetType({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRITaskGetSeqId({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRITaskGetParams({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRITaskSetParams({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIKernelTaskGetAttribute({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRITaskDisable({}));
  EXPECT_NOT_SUPPORTED(aclmdlRICondHandleCreate({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRICondHandleGetCondPtr({}, {}));
  EXPECT_NOT_SUPPORTED(aclmdlRIAddCondTask({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCacheLastTaskOpInfo({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCacheLastTaskExtendInfo({}, {}));
  // Model data dumps
  EXPECT_NOT_SUPPORTED(aclmdlInitDump());
  EXPECT_NOT_SUPPORTED(aclmdlSetDump({}));
  EXPECT_NOT_SUPPORTED(aclmdlFinalizeDump());
  // Sharing across processes: IPC memory, notifies and events
  EXPECT_NOT_SUPPORTED(aclrtIpcMemImportPidInterServer({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtNotifySetImportPidInterServer({}, {}, {}));
  // Sharing across processes: physical memory, virtual addresses, shareable handles
  EXPECT_NOT_SUPPORTED(aclrtReserveMemAddressNoUCMemory({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemMapSelectedLink({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemMapSetLink({}, {}));
  // Shared buffers (Mbuf) of data transfer queues
  EXPECT_NOT_SUPPORTED(aclrtAllocBuf({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFreeBuf({}));
  EXPECT_NOT_SUPPORTED(aclrtGetBufData({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetBufDataLen({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSetBufDataLen({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetBufUserData({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSetBufUserData({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCopyBufRef({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtAppendBufChain({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetBufChainNum({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetBufFromChain({}, {}, {}));
  // Compute groups
  EXPECT_NOT_SUPPORTED(aclrtSetGroup({}));
  EXPECT_NOT_SUPPORTED(aclrtGetGroupCount({}));
  EXPECT_NULL_NOT_SUPPORTED(aclrtCreateGroupInfo());
  EXPECT_NOT_SUPPORTED(aclrtDestroyGroupInfo({}));
  EXPECT_NOT_SUPPORTED(aclrtGetAllGroupInfo({}));
  EXPECT_NOT_SUPPORTED(aclrtGetGroupInfoDetail({}, {}, {}, {}, {}, {}));
  // Labels and stream switches: control flow between streams
  EXPECT_NOT_SUPPORTED(aclrtCreateLabel({}));
  EXPECT_NOT_SUPPORTED(aclrtSetLabel({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDestroyLabel({}));
  EXPECT_NOT_SUPPORTED(aclrtCreateLabelList({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDestroyLabelList({}));
  EXPECT_NOT_SUPPORTED(aclrtSwitchLabelByIndex({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtActiveStream({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSwitchStream({}, {}, {}, {}, {}, {}, {}));
  // Process snapshots
  EXPECT_NOT_SUPPORTED(aclrtSnapShotProcessLock({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSnapShotProcessUnlock({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSnapShotProcessBackup({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSnapShotProcessRestore({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSnapShotCallbackRegister({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSnapShotCallbackUnregister({}, {}));
  // Managed (unified) memory
  EXPECT_NOT_SUPPORTED(aclrtMemAllocManaged({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemManagedAdvise({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemManagedGetAttr({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemManagedGetAttrs({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemManagedPrefetchAsync({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemManagedPrefetchBatchAsync({}, {}, {}, {}, {}, {}, {}, {}));
  // Host memory registered for the device
  EXPECT_NOT_SUPPORTED(aclrtHostRegister({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtHostRegisterV2({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtHostGetDevicePointer({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtHostUnregister({}));
  EXPECT_NOT_SUPPORTED(aclrtHostMemMapCapabilities({}, {}, {}));
  // Cache maintenance (CMO)
  EXPECT_NOT_SUPPORTED(aclrtCmoAsync({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCmoAsyncWithBarrier({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCmoWaitBarrier({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCmoGetDescSize({}));
  EXPECT_NOT_SUPPORTED(aclrtCmoSetDesc({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCmoAsyncWithDesc({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemFlush({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemInvalidate({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceL2CacheFlush({}));
  // Symbols of programs compiled with their kernels
  EXPECT_NOT_SUPPORTED(aclrtGetSymbolAddress({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetSymbolSize({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyFromSymbol({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyFromSymbolAsync({}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyToSymbol({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyToSymbolAsync({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetFuncBySymbol({}, {}));
  // Kernels: the binary, function, argument and launch calls acld lacks
  EXPECT_NULL_NOT_SUPPORTED(aclrtCreateBinary({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDestroyBinary({}));
  EXPECT_NOT_SUPPORTED(aclrtBinaryLoad({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtBinaryGetFunctionByEntry({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtBinarySetExceptionCallback({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFunctionGetBinary({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFunctionGetParamCount({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFunctionGetParamInfo({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetFunctionAttribute({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetFunctionName({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtKernelArgsGetHandleMemSize({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtKernelArgsGetMemSize({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtKernelArgsInitByUserMem({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtKernelArgsParaUpdate({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtLaunchKernelV2({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtLaunchKernelWithHostArgs({}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtLaunchKernelWithArgsArray({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtBinaryGetDevAddress({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtBinaryGetGlobal({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetFunctionAddr({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetFunctionSize({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetHardwareSyncAddr({}));
  EXPECT_NOT_SUPPORTED(aclrtLaunchSIMTKernelWithArgsArray({}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtLaunchSIMTKernelWithHostArgs({}, {}, {}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFunctionGetAvailDynUbufPerBlock({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtRegisterCpuFunc({}, {}, {}, {}));
  // Runtime configuration
  EXPECT_NOT_SUPPORTED(aclrtSetSysParamOpt({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetSysParamOpt({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCtxSetSysParamOpt({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCtxGetSysParamOpt({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSetOpWaitTimeout({}));
  EXPECT_NOT_SUPPORTED(aclrtSetOpExecuteTimeOut({}));
  EXPECT_NOT_SUPPORTED(aclrtSetOpExecuteTimeOutWithMs({}));
  EXPECT_NOT_SUPPORTED(aclrtSetOpExecuteTimeOutV2({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetOpTimeOutInterval({}));
  EXPECT_NOT_SUPPORTED(aclrtGetOpExecuteTimeout({}));
  EXPECT_NOT_SUPPORTED(aclrtSetTsDevice({}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceSetLimit({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetLimit({}, {}));
  EXPECT_NOT_SUPPORTED(aclsysGetCANNVersion({}, {}));
  // Devices
  EXPECT_NOT_SUPPORTED(aclGetDeviceCapability({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetUuid({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetPCIBusId({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetByPCIBusId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetDevicesTopo({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetHostAtomicCapabilities({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceGetP2PAtomicCapabilities({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetPrimaryCtxState({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetLogicDevIdByUserDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetUserDevIdByLogicDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetLogicDevIdByPhyDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetPhyDevIdByLogicDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetUserDevIdByPhyDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetPhyDevIdByUserDevId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtDevicePeerAccessStatus({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtRegDeviceStateCallback({}, {}, {}));
  // Streams
  EXPECT_NOT_SUPPORTED(aclrtSetStreamAttribute({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetStreamAttribute({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtPersistentTaskClean({}));
  EXPECT_NOT_SUPPORTED(aclrtTaskUpdateAsync({}, {}, {}, {}));
  // Events and notifies
  EXPECT_NOT_SUPPORTED(aclrtRecordEventWithFlag({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtStreamWaitEventWithFlag({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtStreamWaitEventWithTimeout({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtQueryEventWaitStatus({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetEventId({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtNotifyBatchReset({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyCreate({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyDestroy({}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyRecord({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyWaitWithTimeout({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyReset({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCntNotifyGetId({}, {}));
  // Memory: allocations, queries, copies and sets
  EXPECT_NOT_SUPPORTED(aclrtMallocAlign32({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMallocCached({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMallocWithCfg({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMallocForTaskScheduler({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMallocHostWithCfg({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtFreeWithDevSync({}));
  EXPECT_NOT_SUPPORTED(aclrtFreeHostWithDevSync({}));
  EXPECT_NOT_SUPPORTED(aclrtPointerGetAttributes({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemGetAddressRange({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCheckMemType({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetMemUsageInfo({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemsetD32({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemsetD32Async({}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpy2d({}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpy2dAsync({}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyAsyncWithCondition({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyAsyncWithOffset({}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetMemcpyDescSize({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSetMemcpyDesc({}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyAsyncWithDesc({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyBatch({}, {}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyBatchV2({}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyBatchAsync({}, {}, {}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemcpyBatchAsyncV2({}, {}, {}, {}, {}, {}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemP2PMap({}, {}, {}, {}));
  // Exceptions and faults
  EXPECT_NOT_SUPPORTED(aclrtExceptionInfoCallbackRegister({}));
  EXPECT_NOT_SUPPORTED(aclrtExceptionInfoCallbackUnregister({}));
  EXPECT_NOT_SUPPORTED(aclrtDeviceTaskAbort({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtSetDeviceTaskAbortCallback({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtGetMemUceInfo({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtMemUceRepair({}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtRepairError({}, {}));
  EXPECT_NOT_SUPPORTED(aclrtCtxGetFloatOverflowAddr({}));
  EXPECT_NOT_SUPPORTED(aclrtNpuGetFloatOverFlowStatus({}, {}, {}, {}));
  EXPECT_NOT_SUPPORTED(aclrtNpuClearFloatOverFlowStatus({}, {}));
  // Profiling and the application log
  EXPECT_NOT_SUPPORTED(aclrtProfTrace({}, {}, {}));

  // aclAppLog returns nothing: the message and the last error tell.
  Forget();
  ACL_APP_LOG(ACL_INFO, "%s %d", "dropped", 1);
  Check("aclAppLog(...)", "");

  if (aclrtResetDevice(0) != ACL_SUCCESS || aclFinalize() != ACL_SUCCESS) {
    std::printf("FAIL cleanup: %s\n", LatestMessage());
    return 1;
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
