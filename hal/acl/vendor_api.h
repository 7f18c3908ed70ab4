// The vendor AscendCL runtime as the acl backend sees it: one table of
// function pointers, every entry resolved with dlsym when the library loads.
//
// The backend calls the vendor only through this table and never names an
// acl* function directly, so it can live inside our own libascendcl.so
// (embedded mode) without binding to the acl* functions that library exports.
// The vendor's ABI is CANN's; client/include/acl/*.h reproduce its types and
// constants. The few vendor entry points those headers do not carry (kernel
// binaries, host registration, event timestamps, utilization) get their
// types below.
//
// A missing required symbol makes Load fail naming the symbol and the
// library. Optional symbols are newer CANN additions; the backend falls back
// when they are absent (see each use).
#ifndef ACLD_HAL_ACL_VENDOR_API_H_
#define ACLD_HAL_ACL_VENDOR_API_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "acl/acl.h"

namespace hal::acl {

// Vendor types our public headers do not declare (values as CANN defines them).
using VendorBinHandle = void*;   // aclrtBinHandle
using VendorFuncHandle = void*;  // aclrtFuncHandle
// aclrtHostRegister's type argument (an enum in CANN, passed as an int).
inline constexpr int kVendorHostRegisterMapped = 0;  // ACL_HOST_REGISTER_MAPPED
// aclrtUtilizationInfo, field for field.
struct VendorUtilizationInfo {
  int32_t cube_utilization;
  int32_t vector_utilization;
  int32_t aicpu_utilization;
  int32_t memory_utilization;
  void* utilization_extend;  // reserved: must be null
};
// aclrtHostRegisterV2's flag that page-locks ordinary host memory.
inline constexpr uint32_t kVendorHostRegPinned = 0x10000000U;  // ACL_HOST_REG_PINNED

// X(name, function type). The backend cannot work without these.
#define ACLD_VENDOR_REQUIRED_SYMBOLS(X)                                                           \
  X(aclInit, aclError(const char*))                                                               \
  X(aclFinalize, aclError())                                                                      \
  X(aclrtGetDeviceCount, aclError(uint32_t*))                                                     \
  X(aclrtSetDevice, aclError(int32_t))                                                            \
  X(aclrtResetDevice, aclError(int32_t))                                                          \
  X(aclrtGetSocName, const char*())                                                               \
  X(aclrtCreateContext, aclError(aclrtContext*, int32_t))                                         \
  X(aclrtDestroyContext, aclError(aclrtContext))                                                  \
  X(aclrtSetCurrentContext, aclError(aclrtContext))                                               \
  X(aclrtGetMemInfo, aclError(aclrtMemAttr, size_t*, size_t*))                                    \
  X(aclrtMalloc, aclError(void**, size_t, aclrtMemMallocPolicy))                                  \
  X(aclrtFree, aclError(void*))                                                                   \
  X(aclrtMallocHost, aclError(void**, size_t))                                                    \
  X(aclrtFreeHost, aclError(void*))                                                               \
  X(aclrtMemcpy, aclError(void*, size_t, const void*, size_t, aclrtMemcpyKind))                   \
  X(aclrtMemset, aclError(void*, size_t, int32_t, size_t))                                        \
  X(aclrtMemcpyAsync, aclError(void*, size_t, const void*, size_t, aclrtMemcpyKind, aclrtStream)) \
  X(aclrtMemsetAsync, aclError(void*, size_t, int32_t, size_t, aclrtStream))                      \
  X(aclrtCreateStream, aclError(aclrtStream*))                                                    \
  X(aclrtDestroyStream, aclError(aclrtStream))                                                    \
  X(aclrtSynchronizeStream, aclError(aclrtStream))                                                \
  X(aclrtStreamGetId, aclError(aclrtStream, int32_t*))                                            \
  X(aclrtSubscribeReport, aclError(uint64_t, aclrtStream))                                        \
  X(aclrtUnSubscribeReport, aclError(uint64_t, aclrtStream))                                      \
  X(aclrtProcessReport, aclError(int32_t))                                                        \
  X(aclrtLaunchCallback, aclError(aclrtCallback, void*, aclrtCallbackBlockType, aclrtStream))     \
  X(aclrtCreateEventWithFlag, aclError(aclrtEvent*, uint32_t))                                    \
  X(aclrtDestroyEvent, aclError(aclrtEvent))                                                      \
  X(aclrtRecordEvent, aclError(aclrtEvent, aclrtStream))                                          \
  X(aclrtStreamWaitEvent, aclError(aclrtStream, aclrtEvent))                                      \
  X(aclrtQueryEventStatus, aclError(aclrtEvent, aclrtEventRecordedStatus*))                       \
  X(aclrtBinaryLoadFromData,                                                                      \
    aclError(const void*, size_t, const void* /* aclrtBinaryLoadOptions* */, VendorBinHandle*))   \
  X(aclrtBinaryGetFunction, aclError(VendorBinHandle, const char*, VendorFuncHandle*))            \
  X(aclrtBinaryUnLoad, aclError(VendorBinHandle))                                                 \
  X(aclrtLaunchKernel, aclError(VendorFuncHandle, uint32_t, const void*, size_t, aclrtStream))    \
  X(aclrtSetExceptionInfoCallback, aclError(aclrtExceptionInfoCallback))                          \
  X(aclrtGetDeviceIdFromExceptionInfo, uint32_t(const aclrtExceptionInfo*))                       \
  X(aclrtGetStreamIdFromExceptionInfo, uint32_t(const aclrtExceptionInfo*))                       \
  X(aclrtGetTaskIdFromExceptionInfo, uint32_t(const aclrtExceptionInfo*))                         \
  X(aclrtGetErrorCodeFromExceptionInfo, uint32_t(const aclrtExceptionInfo*))

// X(name, function type). Null when the vendor does not have them.
#define ACLD_VENDOR_OPTIONAL_SYMBOLS(X)                                       \
  X(aclsimLaunchKernel, aclError(const char*, uint32_t, const void*, size_t, aclrtStream)) \
  X(aclsimGetKernelCount, aclError(uint32_t*))                                \
  X(aclsimGetKernel, aclError(uint32_t, const char**, uint32_t*))             \
  X(aclrtHostRegister, aclError(void*, uint64_t, int, void**))                \
  X(aclrtHostUnregister, aclError(void*))                                     \
  X(aclrtStreamAbort, aclError(aclrtStream))                                  \
  X(aclrtStreamStop, aclError(aclrtStream))                                   \
  X(aclrtSetStreamResLimit, aclError(aclrtStream, aclrtDevResLimitType, uint32_t)) \
  X(aclrtResetStreamResLimit, aclError(aclrtStream))                          \
  X(aclrtSetStreamFailureMode, aclError(aclrtStream, uint64_t))               \
  X(aclrtGetDeviceUtilizationRate, aclError(int32_t, VendorUtilizationInfo*)) \
  X(aclGetCannAttributeList, aclError(const aclCannAttr**, size_t*))          \
  X(aclrtGetDeviceCapability, aclError(int32_t, aclrtDevFeatureType, int32_t*)) \
  X(aclrtGetDeviceInfo, aclError(uint32_t, aclrtDevAttr, int64_t*))           \
  X(aclrtDeviceCanAccessPeer, aclError(int32_t*, int32_t, int32_t))           \
  X(aclrtDeviceEnablePeerAccess, aclError(int32_t, uint32_t))                 \
  X(aclrtEventGetTimestamp, aclError(aclrtEvent, uint64_t*))                  \
  X(aclrtReduceAsync, aclError(void*, const void*, uint64_t, aclrtReduceKind, aclDataType, \
                               aclrtStream, void*))                           \
  X(aclrtValueWait, aclError(void*, uint64_t, uint32_t, aclrtStream))         \
  X(aclrtRandomNumAsync, aclError(const aclrtRandomNumTaskInfo*, aclrtStream, void*)) \
  X(aclrtHostRegisterV2, aclError(void*, uint64_t, uint32_t))                 \
  X(aclrtGetThreadLastTaskId, aclError(uint32_t*))                            \
  X(aclrtExceptionInfoCallbackRegister, aclError(aclrtExceptionInfoCallback)) \
  X(aclrtExceptionInfoCallbackUnregister, aclError(aclrtExceptionInfoCallback)) \
  X(aclrtCreateNotify, aclError(aclrtNotify*, uint64_t))                      \
  X(aclrtDestroyNotify, aclError(aclrtNotify))                                \
  X(aclrtRecordNotify, aclError(aclrtNotify, aclrtStream))                    \
  X(aclrtWaitAndResetNotify, aclError(aclrtNotify, aclrtStream, uint32_t)) \
  X(aclrtGetStreamAvailableNum, aclError(uint32_t*))                          \
  X(aclrtGetEventAvailNum, aclError(uint32_t*))

struct VendorApi {
#define ACLD_VENDOR_FIELD(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  ACLD_VENDOR_REQUIRED_SYMBOLS(ACLD_VENDOR_FIELD)
  ACLD_VENDOR_OPTIONAL_SYMBOLS(ACLD_VENDOR_FIELD)
#undef ACLD_VENDOR_FIELD

  std::string library;  // the path it was loaded from, for messages
  void* handle = nullptr;

  // dlopen(path, RTLD_NOW | RTLD_LOCAL [| RTLD_DEEPBIND]) and every dlsym.
  // The library is never dlclose'd once loaded: a vendor runtime keeps
  // threads of its own that must not lose their code.
  static absl::StatusOr<std::shared_ptr<const VendorApi>> Load(const std::string& path,
                                                               bool deep_bind);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_VENDOR_API_H_
