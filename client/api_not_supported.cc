// The functions of CANN's acl_rt.h and acl_base_rt.h that acld does not
// provide (yet). They are declared in client/include so that CANN programs
// compile and link unchanged; each one does nothing, returns
// ACL_ERROR_API_NOT_SUPPORT (NULL when it returns a pointer) and leaves
// "<function>: <reason>" for aclGetRecentErrMsg. None reads its arguments, so
// any value, NULL included, is safe. docs/api-compat.md lists them with their
// reasons; libascendcl_not_supported_test.sh calls every one. Linked into
// libascendcl.so but not into the stand-in vendor library (see BUILD.bazel).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

namespace {

// Reports `api` as not supported, for `reason`.
aclError NotSupported(const char* api, const char* reason) {
  return acl_client::Api([&]() -> absl::Status {
    return acld::AclStatus(ACL_ERROR_API_NOT_SUPPORT, absl::StrCat(api, ": ", reason));
  });
}

// The same, for a function that returns a handle: NULL.
void* NotSupportedNull(const char* api, const char* reason) {
  NotSupported(api, reason);
  return nullptr;
}

// The reasons, one per group below.
constexpr char kModels[] =
    "models are not supported yet: acld does not capture, build or run model runtime instances";
constexpr char kDumps[] = "model data dumps are not supported yet: acld runs no models";
constexpr char kPhysicalMemoryExtras[] =
    "not supported yet: acld maps, shares and frees physical memory (client/api_physical_memory.cc) "
    "but has no uncached reservations and no choice of link";
constexpr char kOtherServers[] =
    "sharing with processes of other servers is not supported: acld serves one host, and its "
    "whitelists name processes of this one";
constexpr char kBuffers[] =
    "shared buffers (Mbuf) are not supported: acld has no data transfer (TDT) queues";
constexpr char kGroups[] =
    "compute groups are not supported: acld does not divide a device's cores into groups";
constexpr char kLabels[] =
    "labels and stream switches are not supported: acld runs each stream's tasks in order and "
    "never branches to another stream";
constexpr char kSnapshots[] =
    "process snapshots (lock, backup, restore) are not supported: acld cannot save and restore "
    "a process's device state";
constexpr char kManagedMemory[] =
    "managed (unified) memory, addressable from host and device alike, is not supported yet";
constexpr char kHostRegistration[] =
    "registering host memory for device access is not supported yet; aclrtMallocHost gives host "
    "memory that copies use directly";
constexpr char kCacheOperations[] =
    "cache maintenance operations are not supported: acld does not expose the device's caches";
constexpr char kSymbols[] =
    "device variables and kernels found by symbol need a program compiled with its kernels, "
    "which acld does not support; load kernels with aclrtBinaryLoadFromData or "
    "aclrtBinaryLoadFromFile";
constexpr char kKernelCalls[] =
    "not supported yet (issue: API breadth); acld loads and launches kernels with "
    "aclrtBinaryLoadFromData/File, aclrtBinaryGetFunction, the aclrtKernelArgs* calls, "
    "aclrtLaunchKernel and aclrtLaunchKernelWithConfig";
constexpr char kDeviceAddresses[] =
    "acld does not expose the device addresses of kernel code and data";
constexpr char kSimt[] = "SIMT kernels are not supported yet";
constexpr char kCpuKernels[] = "AI CPU kernels are not supported: none run through acld";
constexpr char kSystemParameters[] =
    "system parameters (deterministic computation, debug kernels, early start) are not "
    "supported yet (issue: API breadth)";
constexpr char kTimeouts[] =
    "operator execution and wait timeouts are not supported yet (issue: API breadth); "
    "aclrtSynchronizeStreamWithTimeout and aclrtSynchronizeEventWithTimeout bound a wait";
constexpr char kTaskScheduler[] =
    "choosing a task scheduler is not supported yet (issue: API breadth)";
constexpr char kDeviceLimits[] =
    "device limits (kernel stack and printf buffer sizes) are not supported yet "
    "(issue: API breadth)";
constexpr char kCannVersion[] =
    "deprecated in CANN and not provided: aclsysGetVersionStr and aclsysGetVersionNum give the "
    "versions";
constexpr char kDeviceQueries[] =
    "this device query is not supported yet (issue: API breadth); aclrtGetDeviceCount and "
    "aclrtGetDeviceInfo describe acld's devices";
constexpr char kDeviceIds[] =
    "acld numbers its devices itself and does not map them to logical or physical ids yet";
constexpr char kPeerStatus[] =
    "not supported yet (issue: API breadth); aclrtDeviceCanAccessPeer tells whether a device "
    "reaches another's memory";
constexpr char kDeviceStateCallbacks[] =
    "device state callbacks are not supported yet (issue: API breadth)";
constexpr char kStreamAttributes[] =
    "stream attributes are not supported yet (issue: API breadth); aclrtSetStreamFailureMode "
    "and aclrtStreamGetPriority work";
constexpr char kPersistentStreams[] =
    "persistent streams are not supported yet: acld runs each task once and keeps none to clean";
constexpr char kTaskUpdates[] =
    "updating a task already on a stream is not supported: acld does not change a task once it "
    "is enqueued";
constexpr char kEventFlags[] =
    "not supported yet (issue: API breadth); aclrtRecordEvent, aclrtStreamWaitEvent and "
    "aclrtQueryEventStatus work";
constexpr char kNotifyBatches[] =
    "resetting notifies in a batch is not supported yet (issue: API breadth); "
    "aclrtWaitAndResetNotify resets one";
constexpr char kCountingNotifies[] =
    "counting notifies are not supported yet (issue: API breadth); aclrtCreateNotify makes a "
    "one-shot notify";
constexpr char kAllocations[] =
    "this allocation call is not supported yet (issue: API breadth); aclrtMalloc, "
    "aclrtMallocHost, aclrtFree and aclrtFreeHost work";
constexpr char kMemoryQueries[] =
    "this memory query is not supported yet (issue: API breadth); aclrtGetMemInfo reports free "
    "and total memory";
constexpr char kCopies[] =
    "this copy or set is not supported yet (issue: API breadth); aclrtMemcpy, aclrtMemcpyAsync, "
    "aclrtMemset and aclrtMemsetAsync work";
constexpr char kPeerMapping[] =
    "mapping a peer device's pages in advance is not supported yet (issue: API breadth); copies "
    "between devices need only aclrtDeviceEnablePeerAccess";
constexpr char kExceptionCallbacks[] =
    "not supported yet (issue: API breadth); aclrtSetExceptionInfoCallback sets the process's "
    "exception callback";
constexpr char kDeviceAbort[] =
    "aborting a whole device's tasks is not supported yet (issue: API breadth); aclrtStreamAbort "
    "discards a stream's work";
constexpr char kMemoryErrors[] =
    "memory error (UCE) reports and repairs are not supported: no acld backend reports "
    "uncorrectable memory errors";
constexpr char kFaultRepair[] =
    "fault repair is not supported: acld's backends report no repairable faults "
    "(aclrtGetErrorVerbose gives tryRepair 0)";
constexpr char kOverflowExtras[] =
    "not supported yet (issue: API breadth); aclrtGetFloatOverflowStatus and "
    "aclrtResetFloatOverflowStatus read and reset the overflow status";
constexpr char kProfiling[] = "profiling is not supported yet";
constexpr char kAppLog[] = "the application log is not supported yet; the message was dropped";

}  // namespace

extern "C" {

// ---- Models: capture, build, run and inspect model runtime instances ----
aclError aclmdlRICaptureBegin(aclrtStream, aclmdlRICaptureMode) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureToModelRIBegin(aclrtStream, aclmdlRI, aclmdlRICaptureMode) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureGetInfo(aclrtStream, aclmdlRICaptureStatus*, aclmdlRI*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureEnd(aclrtStream, aclmdlRI*) { return NotSupported(__func__, kModels); }
aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureTaskGrpBegin(aclrtStream) { return NotSupported(__func__, kModels); }
aclError aclmdlRICaptureTaskGrpEnd(aclrtStream, aclrtTaskGrp*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream, aclrtTaskGrp) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream) { return NotSupported(__func__, kModels); }
aclError aclmdlRIBuildBegin(aclmdlRI*, uint32_t) { return NotSupported(__func__, kModels); }
aclError aclmdlRIBindStream(aclmdlRI, aclrtStream, uint32_t) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIEndTask(aclmdlRI, aclrtStream) { return NotSupported(__func__, kModels); }
aclError aclmdlRIBuildEnd(aclmdlRI, void*) { return NotSupported(__func__, kModels); }
aclError aclmdlRIUnbindStream(aclmdlRI, aclrtStream) { return NotSupported(__func__, kModels); }
aclError aclmdlRIExecute(aclmdlRI, int32_t) { return NotSupported(__func__, kModels); }
aclError aclmdlRIExecuteAsync(aclmdlRI, aclrtStream) { return NotSupported(__func__, kModels); }
aclError aclmdlRIAbort(aclmdlRI) { return NotSupported(__func__, kModels); }
aclError aclmdlRIUpdate(aclmdlRI) { return NotSupported(__func__, kModels); }
aclError aclmdlRIDestroy(aclmdlRI) { return NotSupported(__func__, kModels); }
aclError aclmdlRIDestroyRegisterCallback(aclmdlRI, aclrtCallback, void*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIDestroyUnregisterCallback(aclmdlRI, aclrtCallback) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRISetName(aclmdlRI, const char*) { return NotSupported(__func__, kModels); }
aclError aclmdlRIGetName(aclmdlRI, uint32_t, char*) { return NotSupported(__func__, kModels); }
aclError aclmdlRIGetId(aclmdlRI, uint32_t*) { return NotSupported(__func__, kModels); }
aclError aclmdlRIDebugPrint(aclmdlRI) { return NotSupported(__func__, kModels); }
aclError aclmdlRIDebugJsonPrint(aclmdlRI, const char*, uint32_t) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIGetStreams(aclmdlRI, aclrtStream*, uint32_t*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIGetTasksByStream(aclrtStream, aclmdlRITask*, uint32_t*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRITaskGetType(aclmdlRITask, aclmdlRITaskType*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRITaskGetSeqId(aclmdlRITask, uint32_t*) { return NotSupported(__func__, kModels); }
aclError aclmdlRITaskGetParams(aclmdlRITask, aclmdlRITaskParams*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRITaskSetParams(aclmdlRITask, aclmdlRITaskParams*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIKernelTaskGetAttribute(aclmdlRITask, aclrtLaunchKernelAttrId,
                                        aclrtLaunchKernelAttrValue*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRITaskDisable(aclmdlRITask) { return NotSupported(__func__, kModels); }
aclError aclmdlRICondHandleCreate(aclmdlRI, uint32_t, aclmdlRICondHandleFlag, aclmdlRICondHandle*) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRICondHandleGetCondPtr(aclmdlRICondHandle, uint64_t**) {
  return NotSupported(__func__, kModels);
}
aclError aclmdlRIAddCondTask(aclmdlRICondTaskParams, aclrtStream, uint32_t) {
  return NotSupported(__func__, kModels);
}
// CANN keeps this information only for tasks captured into a model.
aclError aclrtCacheLastTaskOpInfo(const void* const, const size_t) {
  return NotSupported(__func__, kModels);
}
aclError aclrtCacheLastTaskExtendInfo(const char* const, const size_t) {
  return NotSupported(__func__, kModels);
}

// ---- Model data dumps ----
aclError aclmdlInitDump() { return NotSupported(__func__, kDumps); }
aclError aclmdlSetDump(const char*) { return NotSupported(__func__, kDumps); }
aclError aclmdlFinalizeDump() { return NotSupported(__func__, kDumps); }

// ---- Sharing across processes: IPC memory, notifies and events ----
aclError aclrtIpcMemImportPidInterServer(const char*, aclrtServerPid*, size_t) {
  return NotSupported(__func__, kOtherServers);
}
aclError aclrtNotifySetImportPidInterServer(aclrtNotify, aclrtServerPid*, size_t) {
  return NotSupported(__func__, kOtherServers);
}

// ---- Physical memory and virtual addresses: the queries and links acld lacks ----
aclError aclrtReserveMemAddressNoUCMemory(void**, size_t, size_t, void*, uint64_t) {
  return NotSupported(__func__, kPhysicalMemoryExtras);
}
aclError aclrtMemMapSelectedLink(void*, size_t, void*, uint32_t) {
  return NotSupported(__func__, kPhysicalMemoryExtras);
}
aclError aclrtMemMapSetLink(aclrtDrvMemHandle, aclrtMemLinkType) {
  return NotSupported(__func__, kPhysicalMemoryExtras);
}

// ---- Shared buffers (Mbuf) of data transfer queues ----
aclError aclrtAllocBuf(aclrtMbuf*, size_t) { return NotSupported(__func__, kBuffers); }
aclError aclrtFreeBuf(aclrtMbuf) { return NotSupported(__func__, kBuffers); }
aclError aclrtGetBufData(const aclrtMbuf, void**, size_t*) {
  return NotSupported(__func__, kBuffers);
}
aclError aclrtGetBufDataLen(aclrtMbuf, size_t*) { return NotSupported(__func__, kBuffers); }
aclError aclrtSetBufDataLen(aclrtMbuf, size_t) { return NotSupported(__func__, kBuffers); }
aclError aclrtGetBufUserData(const aclrtMbuf, void*, size_t, size_t) {
  return NotSupported(__func__, kBuffers);
}
aclError aclrtSetBufUserData(aclrtMbuf, const void*, size_t, size_t) {
  return NotSupported(__func__, kBuffers);
}
aclError aclrtCopyBufRef(const aclrtMbuf, aclrtMbuf*) { return NotSupported(__func__, kBuffers); }
aclError aclrtAppendBufChain(aclrtMbuf, aclrtMbuf) { return NotSupported(__func__, kBuffers); }
aclError aclrtGetBufChainNum(aclrtMbuf, uint32_t*) { return NotSupported(__func__, kBuffers); }
aclError aclrtGetBufFromChain(aclrtMbuf, uint32_t, aclrtMbuf*) {
  return NotSupported(__func__, kBuffers);
}

// ---- Compute groups ----
aclError aclrtSetGroup(int32_t) { return NotSupported(__func__, kGroups); }
aclError aclrtGetGroupCount(uint32_t*) { return NotSupported(__func__, kGroups); }
aclrtGroupInfo* aclrtCreateGroupInfo() {
  return static_cast<aclrtGroupInfo*>(NotSupportedNull(__func__, kGroups));
}
aclError aclrtDestroyGroupInfo(aclrtGroupInfo*) { return NotSupported(__func__, kGroups); }
aclError aclrtGetAllGroupInfo(aclrtGroupInfo*) { return NotSupported(__func__, kGroups); }
aclError aclrtGetGroupInfoDetail(const aclrtGroupInfo*, int32_t, aclrtGroupAttr, void*, size_t,
                                 size_t*) {
  return NotSupported(__func__, kGroups);
}

// ---- Labels and stream switches: control flow between streams ----
aclError aclrtCreateLabel(aclrtLabel*) { return NotSupported(__func__, kLabels); }
aclError aclrtSetLabel(aclrtLabel, aclrtStream) { return NotSupported(__func__, kLabels); }
aclError aclrtDestroyLabel(aclrtLabel) { return NotSupported(__func__, kLabels); }
aclError aclrtCreateLabelList(aclrtLabel*, size_t, aclrtLabelList*) {
  return NotSupported(__func__, kLabels);
}
aclError aclrtDestroyLabelList(aclrtLabelList) { return NotSupported(__func__, kLabels); }
aclError aclrtSwitchLabelByIndex(void*, uint32_t, aclrtLabelList, aclrtStream) {
  return NotSupported(__func__, kLabels);
}
aclError aclrtActiveStream(aclrtStream, aclrtStream) { return NotSupported(__func__, kLabels); }
aclError aclrtSwitchStream(void*, aclrtCondition, void*, aclrtCompareDataType, aclrtStream,
                           aclrtStream, aclrtStream) {
  return NotSupported(__func__, kLabels);
}

// ---- Process snapshots ----
aclError aclrtSnapShotProcessLock(int, void*) { return NotSupported(__func__, kSnapshots); }
aclError aclrtSnapShotProcessUnlock(int, void*) { return NotSupported(__func__, kSnapshots); }
aclError aclrtSnapShotProcessBackup(int, aclrtSnapShotBackupArgs*) {
  return NotSupported(__func__, kSnapshots);
}
aclError aclrtSnapShotProcessRestore(int, aclrtSnapShotRestoreArgs*) {
  return NotSupported(__func__, kSnapshots);
}
aclError aclrtSnapShotCallbackRegister(aclrtSnapShotStage, aclrtSnapShotCallBack, void*) {
  return NotSupported(__func__, kSnapshots);
}
aclError aclrtSnapShotCallbackUnregister(aclrtSnapShotStage, aclrtSnapShotCallBack) {
  return NotSupported(__func__, kSnapshots);
}

// ---- Managed (unified) memory ----
aclError aclrtMemAllocManaged(void**, uint64_t, uint32_t) {
  return NotSupported(__func__, kManagedMemory);
}
aclError aclrtMemManagedAdvise(const void* const, uint64_t, aclrtMemManagedAdviseType,
                               aclrtMemManagedLocation) {
  return NotSupported(__func__, kManagedMemory);
}
aclError aclrtMemManagedGetAttr(aclrtMemManagedRangeAttribute, const void*, size_t, void*, size_t) {
  return NotSupported(__func__, kManagedMemory);
}
aclError aclrtMemManagedGetAttrs(aclrtMemManagedRangeAttribute*, size_t, const void*, size_t,
                                 void**, size_t*) {
  return NotSupported(__func__, kManagedMemory);
}
aclError aclrtMemManagedPrefetchAsync(const void*, size_t, aclrtMemManagedLocation, uint32_t,
                                      aclrtStream) {
  return NotSupported(__func__, kManagedMemory);
}
aclError aclrtMemManagedPrefetchBatchAsync(const void**, size_t*, size_t, aclrtMemManagedLocation*,
                                           size_t*, size_t, uint64_t, aclrtStream) {
  return NotSupported(__func__, kManagedMemory);
}

// ---- Host memory registered for the device ----
aclError aclrtHostRegister(void*, uint64_t, aclrtHostRegisterType, void**) {
  return NotSupported(__func__, kHostRegistration);
}
aclError aclrtHostRegisterV2(void*, uint64_t, uint32_t) {
  return NotSupported(__func__, kHostRegistration);
}
aclError aclrtHostGetDevicePointer(void*, void**, uint32_t) {
  return NotSupported(__func__, kHostRegistration);
}
aclError aclrtHostUnregister(void*) { return NotSupported(__func__, kHostRegistration); }
aclError aclrtHostMemMapCapabilities(uint32_t, aclrtHacType, aclrtHostMemMapCapability*) {
  return NotSupported(__func__, kHostRegistration);
}

// ---- Cache maintenance (CMO) ----
aclError aclrtCmoAsync(void*, size_t, aclrtCmoType, aclrtStream) {
  return NotSupported(__func__, kCacheOperations);
}
aclError aclrtCmoAsyncWithBarrier(void*, size_t, aclrtCmoType, uint32_t, aclrtStream) {
  return NotSupported(__func__, kCacheOperations);
}
aclError aclrtCmoWaitBarrier(aclrtBarrierTaskInfo*, aclrtStream, uint32_t) {
  return NotSupported(__func__, kCacheOperations);
}
aclError aclrtCmoGetDescSize(size_t*) { return NotSupported(__func__, kCacheOperations); }
aclError aclrtCmoSetDesc(void*, void*, size_t) { return NotSupported(__func__, kCacheOperations); }
aclError aclrtCmoAsyncWithDesc(void*, aclrtCmoType, aclrtStream, const void*) {
  return NotSupported(__func__, kCacheOperations);
}
aclError aclrtMemFlush(void*, size_t) { return NotSupported(__func__, kCacheOperations); }
aclError aclrtMemInvalidate(void*, size_t) { return NotSupported(__func__, kCacheOperations); }
aclError aclrtDeviceL2CacheFlush(void*) { return NotSupported(__func__, kCacheOperations); }

// ---- Symbols of programs compiled with their kernels ----
aclError aclrtGetSymbolAddress(const void*, void**) { return NotSupported(__func__, kSymbols); }
aclError aclrtGetSymbolSize(const void*, size_t*) { return NotSupported(__func__, kSymbols); }
aclError aclrtMemcpyFromSymbol(void*, size_t, const void*, size_t, size_t, aclrtMemcpyKind) {
  return NotSupported(__func__, kSymbols);
}
aclError aclrtMemcpyFromSymbolAsync(void*, size_t, const void*, size_t, size_t, aclrtMemcpyKind,
                                    aclrtStream) {
  return NotSupported(__func__, kSymbols);
}
aclError aclrtMemcpyToSymbol(const void*, const void*, size_t, size_t, aclrtMemcpyKind) {
  return NotSupported(__func__, kSymbols);
}
aclError aclrtMemcpyToSymbolAsync(const void*, const void*, size_t, size_t, aclrtMemcpyKind,
                                  aclrtStream) {
  return NotSupported(__func__, kSymbols);
}
aclError aclrtGetFuncBySymbol(const void*, aclrtFuncHandle*) {
  return NotSupported(__func__, kSymbols);
}

// ---- Kernels: the binary, function, argument and launch calls acld lacks ----
aclrtBinary aclrtCreateBinary(const void*, size_t) {
  return NotSupportedNull(__func__, kKernelCalls);
}
aclError aclrtDestroyBinary(aclrtBinary) { return NotSupported(__func__, kKernelCalls); }
aclError aclrtBinaryLoad(const aclrtBinary, aclrtBinHandle*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtBinaryGetFunctionByEntry(aclrtBinHandle, uint64_t, aclrtFuncHandle*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtBinarySetExceptionCallback(aclrtBinHandle, aclrtOpExceptionCallback, void*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtFunctionGetBinary(const aclrtFuncHandle, aclrtBinHandle*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtFunctionGetParamCount(const void*, size_t*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtFunctionGetParamInfo(const void*, size_t, size_t*, size_t*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtGetFunctionAttribute(aclrtFuncHandle, aclrtFuncAttribute, int64_t*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtGetFunctionName(aclrtFuncHandle, uint32_t, char*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtKernelArgsGetHandleMemSize(aclrtFuncHandle, size_t*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtKernelArgsGetMemSize(aclrtFuncHandle, size_t, size_t*) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtKernelArgsInitByUserMem(aclrtFuncHandle, aclrtArgsHandle, void*, size_t) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtKernelArgsParaUpdate(aclrtArgsHandle, aclrtParamHandle, void*, size_t) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtLaunchKernelV2(aclrtFuncHandle, uint32_t, const void*, size_t, aclrtLaunchKernelCfg*,
                             aclrtStream) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle, uint32_t, aclrtStream,
                                       aclrtLaunchKernelCfg*, void*, size_t, aclrtPlaceHolderInfo*,
                                       size_t) {
  return NotSupported(__func__, kKernelCalls);
}
aclError aclrtLaunchKernelWithArgsArray(void*, uint32_t, aclrtStream, aclrtLaunchKernelCfg*,
                                        void**) {
  return NotSupported(__func__, kKernelCalls);
}
// Device-side addresses.
aclError aclrtBinaryGetDevAddress(const aclrtBinHandle, void**, size_t*) {
  return NotSupported(__func__, kDeviceAddresses);
}
aclError aclrtBinaryGetGlobal(aclrtBinHandle, const char*, void**, size_t*) {
  return NotSupported(__func__, kDeviceAddresses);
}
aclError aclrtGetFunctionAddr(aclrtFuncHandle, void**, void**) {
  return NotSupported(__func__, kDeviceAddresses);
}
aclError aclrtGetFunctionSize(aclrtFuncHandle, size_t*, size_t*) {
  return NotSupported(__func__, kDeviceAddresses);
}
aclError aclrtGetHardwareSyncAddr(void**) { return NotSupported(__func__, kDeviceAddresses); }
// SIMT and AI CPU kernels.
aclError aclrtLaunchSIMTKernelWithArgsArray(void*, dim3, dim3, size_t, aclrtStream,
                                            aclrtLaunchKernelCfg*, void**) {
  return NotSupported(__func__, kSimt);
}
aclError aclrtLaunchSIMTKernelWithHostArgs(void*, dim3, dim3, size_t, aclrtStream,
                                           aclrtLaunchKernelCfg*, void*, size_t,
                                           aclrtPlaceHolderInfo*, size_t) {
  return NotSupported(__func__, kSimt);
}
aclError aclrtFunctionGetAvailDynUbufPerBlock(void*, uint32_t, size_t*) {
  return NotSupported(__func__, kSimt);
}
aclError aclrtRegisterCpuFunc(const aclrtBinHandle, const char*, const char*, aclrtFuncHandle*) {
  return NotSupported(__func__, kCpuKernels);
}

// ---- Runtime configuration ----
aclError aclrtSetSysParamOpt(aclSysParamOpt, int64_t) {
  return NotSupported(__func__, kSystemParameters);
}
aclError aclrtGetSysParamOpt(aclSysParamOpt, int64_t*) {
  return NotSupported(__func__, kSystemParameters);
}
aclError aclrtCtxSetSysParamOpt(aclSysParamOpt, int64_t) {
  return NotSupported(__func__, kSystemParameters);
}
aclError aclrtCtxGetSysParamOpt(aclSysParamOpt, int64_t*) {
  return NotSupported(__func__, kSystemParameters);
}
aclError aclrtSetOpWaitTimeout(uint32_t) { return NotSupported(__func__, kTimeouts); }
aclError aclrtSetOpExecuteTimeOut(uint32_t) { return NotSupported(__func__, kTimeouts); }
aclError aclrtSetOpExecuteTimeOutWithMs(uint32_t) { return NotSupported(__func__, kTimeouts); }
aclError aclrtSetOpExecuteTimeOutV2(uint64_t, uint64_t*) {
  return NotSupported(__func__, kTimeouts);
}
aclError aclrtGetOpTimeOutInterval(uint64_t*) { return NotSupported(__func__, kTimeouts); }
aclError aclrtGetOpExecuteTimeout(uint32_t* const) { return NotSupported(__func__, kTimeouts); }
aclError aclrtSetTsDevice(aclrtTsId) { return NotSupported(__func__, kTaskScheduler); }
aclError aclrtDeviceSetLimit(aclrtDeviceLimit, size_t) {
  return NotSupported(__func__, kDeviceLimits);
}
aclError aclrtDeviceGetLimit(aclrtDeviceLimit, size_t*) {
  return NotSupported(__func__, kDeviceLimits);
}
aclError aclsysGetCANNVersion(aclCANNPackageName, aclCANNPackageVersion*) {
  return NotSupported(__func__, kCannVersion);
}

// ---- Devices ----
aclError aclGetDeviceCapability(uint32_t, aclDeviceInfo, int64_t*) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtDeviceGetUuid(int32_t, aclrtUuid*) { return NotSupported(__func__, kDeviceQueries); }
aclError aclrtDeviceGetPCIBusId(int32_t, char*, int32_t) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtDeviceGetByPCIBusId(const char*, int32_t*) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtGetDevicesTopo(uint32_t, uint32_t, uint64_t*) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtDeviceGetHostAtomicCapabilities(uint32_t*, const aclrtAtomicOperation*,
                                              const uint32_t, int32_t) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtDeviceGetP2PAtomicCapabilities(uint32_t*, const aclrtAtomicOperation*, const uint32_t,
                                             int32_t, int32_t) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtGetPrimaryCtxState(int32_t, uint32_t*, int32_t*) {
  return NotSupported(__func__, kDeviceQueries);
}
aclError aclrtGetLogicDevIdByUserDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtGetUserDevIdByLogicDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtGetLogicDevIdByPhyDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtGetPhyDevIdByLogicDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtGetUserDevIdByPhyDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtGetPhyDevIdByUserDevId(const int32_t, int32_t* const) {
  return NotSupported(__func__, kDeviceIds);
}
aclError aclrtDevicePeerAccessStatus(int32_t, int32_t, int32_t*) {
  return NotSupported(__func__, kPeerStatus);
}
aclError aclrtRegDeviceStateCallback(const char*, aclrtDeviceStateCallback, void*) {
  return NotSupported(__func__, kDeviceStateCallbacks);
}

// ---- Streams ----
aclError aclrtSetStreamAttribute(aclrtStream, aclrtStreamAttr, aclrtStreamAttrValue*) {
  return NotSupported(__func__, kStreamAttributes);
}
aclError aclrtGetStreamAttribute(aclrtStream, aclrtStreamAttr, aclrtStreamAttrValue*) {
  return NotSupported(__func__, kStreamAttributes);
}
aclError aclrtPersistentTaskClean(aclrtStream) {
  return NotSupported(__func__, kPersistentStreams);
}
aclError aclrtTaskUpdateAsync(aclrtStream, uint32_t, aclrtTaskUpdateInfo*, aclrtStream) {
  return NotSupported(__func__, kTaskUpdates);
}

// ---- Events and notifies ----
aclError aclrtRecordEventWithFlag(aclrtEvent, aclrtStream, uint32_t) {
  return NotSupported(__func__, kEventFlags);
}
aclError aclrtStreamWaitEventWithFlag(aclrtStream, aclrtEvent, uint32_t, uint32_t) {
  return NotSupported(__func__, kEventFlags);
}
aclError aclrtStreamWaitEventWithTimeout(aclrtStream, aclrtEvent, int32_t) {
  return NotSupported(__func__, kEventFlags);
}
aclError aclrtQueryEventWaitStatus(aclrtEvent, aclrtEventWaitStatus*) {
  return NotSupported(__func__, kEventFlags);
}
aclError aclrtGetEventId(aclrtEvent, uint32_t*) { return NotSupported(__func__, kEventFlags); }
aclError aclrtNotifyBatchReset(aclrtNotify*, size_t) {
  return NotSupported(__func__, kNotifyBatches);
}
aclError aclrtCntNotifyCreate(aclrtCntNotify*, uint64_t) {
  return NotSupported(__func__, kCountingNotifies);
}
aclError aclrtCntNotifyDestroy(aclrtCntNotify) { return NotSupported(__func__, kCountingNotifies); }
aclError aclrtCntNotifyRecord(aclrtCntNotify, aclrtStream, aclrtCntNotifyRecordInfo*) {
  return NotSupported(__func__, kCountingNotifies);
}
aclError aclrtCntNotifyWaitWithTimeout(aclrtCntNotify, aclrtStream, aclrtCntNotifyWaitInfo*) {
  return NotSupported(__func__, kCountingNotifies);
}
aclError aclrtCntNotifyReset(aclrtCntNotify, aclrtStream) {
  return NotSupported(__func__, kCountingNotifies);
}
aclError aclrtCntNotifyGetId(aclrtCntNotify, uint32_t*) {
  return NotSupported(__func__, kCountingNotifies);
}

// ---- Memory: allocations, queries, copies and sets ----
aclError aclrtMallocAlign32(void**, size_t, aclrtMemMallocPolicy) {
  return NotSupported(__func__, kAllocations);
}
aclError aclrtMallocCached(void**, size_t, aclrtMemMallocPolicy) {
  return NotSupported(__func__, kAllocations);
}
aclError aclrtMallocWithCfg(void**, size_t, aclrtMemMallocPolicy, aclrtMallocConfig*) {
  return NotSupported(__func__, kAllocations);
}
aclError aclrtMallocForTaskScheduler(void**, size_t, aclrtMemMallocPolicy, aclrtMallocConfig*) {
  return NotSupported(__func__, kAllocations);
}
aclError aclrtMallocHostWithCfg(void**, uint64_t, aclrtMallocConfig*) {
  return NotSupported(__func__, kAllocations);
}
aclError aclrtFreeWithDevSync(void*) { return NotSupported(__func__, kAllocations); }
aclError aclrtFreeHostWithDevSync(void*) { return NotSupported(__func__, kAllocations); }
aclError aclrtPointerGetAttributes(const void*, aclrtPtrAttributes*) {
  return NotSupported(__func__, kMemoryQueries);
}
aclError aclrtMemGetAddressRange(void*, void**, size_t*) {
  return NotSupported(__func__, kMemoryQueries);
}
aclError aclrtCheckMemType(void**, uint32_t, uint32_t, uint32_t*, uint32_t) {
  return NotSupported(__func__, kMemoryQueries);
}
aclError aclrtGetMemUsageInfo(int32_t, aclrtMemUsageInfo*, size_t, size_t*) {
  return NotSupported(__func__, kMemoryQueries);
}
aclError aclrtMemsetD32(void*, size_t, uint32_t, size_t) { return NotSupported(__func__, kCopies); }
aclError aclrtMemsetD32Async(void*, size_t, uint32_t, size_t, aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpy2d(void*, size_t, const void*, size_t, size_t, size_t, aclrtMemcpyKind) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpy2dAsync(void*, size_t, const void*, size_t, size_t, size_t, aclrtMemcpyKind,
                            aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyAsyncWithCondition(void*, size_t, const void*, size_t, aclrtMemcpyKind,
                                       aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyAsyncWithOffset(void**, size_t, size_t, const void**, size_t, size_t,
                                    aclrtMemcpyKind, aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtGetMemcpyDescSize(aclrtMemcpyKind, size_t*) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtSetMemcpyDesc(void*, aclrtMemcpyKind, void*, void*, size_t, void*) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyAsyncWithDesc(void*, aclrtMemcpyKind, aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyBatch(void**, size_t*, void**, size_t*, size_t, aclrtMemcpyBatchAttr*, size_t*,
                          size_t, size_t*) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyBatchV2(void**, size_t*, void**, size_t*, size_t, aclrtMemcpyBatchAttr*,
                            size_t*, size_t) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyBatchAsync(void**, size_t*, void**, size_t*, size_t, aclrtMemcpyBatchAttr*,
                               size_t*, size_t, size_t*, aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemcpyBatchAsyncV2(void**, size_t*, void**, size_t*, size_t, aclrtMemcpyBatchAttr*,
                                 size_t*, size_t, aclrtStream) {
  return NotSupported(__func__, kCopies);
}
aclError aclrtMemP2PMap(void*, size_t, int32_t, uint64_t) {
  return NotSupported(__func__, kPeerMapping);
}

// ---- Exceptions and faults ----
aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback) {
  return NotSupported(__func__, kExceptionCallbacks);
}
aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback) {
  return NotSupported(__func__, kExceptionCallbacks);
}
aclError aclrtDeviceTaskAbort(int32_t, uint32_t) { return NotSupported(__func__, kDeviceAbort); }
aclError aclrtSetDeviceTaskAbortCallback(const char*, aclrtDeviceTaskAbortCallback, void*) {
  return NotSupported(__func__, kDeviceAbort);
}
aclError aclrtGetMemUceInfo(int32_t, aclrtMemUceInfo*, size_t, size_t*) {
  return NotSupported(__func__, kMemoryErrors);
}
aclError aclrtMemUceRepair(int32_t, aclrtMemUceInfo*, size_t) {
  return NotSupported(__func__, kMemoryErrors);
}
aclError aclrtRepairError(int32_t, const aclrtErrorInfo*) {
  return NotSupported(__func__, kFaultRepair);
}
aclError aclrtCtxGetFloatOverflowAddr(void**) { return NotSupported(__func__, kOverflowExtras); }
aclError aclrtNpuGetFloatOverFlowStatus(void*, uint64_t, uint32_t, aclrtStream) {
  return NotSupported(__func__, kOverflowExtras);
}
aclError aclrtNpuClearFloatOverFlowStatus(uint32_t, aclrtStream) {
  return NotSupported(__func__, kOverflowExtras);
}

// ---- Profiling and the application log ----
aclError aclrtProfTrace(void*, int32_t, aclrtStream) { return NotSupported(__func__, kProfiling); }

// Returns nothing: the dropped message is reported through aclGetRecentErrMsg only.
void aclAppLog(aclLogLevel, const char*, const char*, uint32_t, const char*, ...) {
  NotSupported(__func__, kAppLog);
}

}  // extern "C"
