// C entry points for host callbacks, report callbacks, exception info and the
// last error (SPEC section 6). The functions stay in this process; the daemon
// only orders them in their streams.
#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "client/exception_info.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::CallbackDispatcher;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::NullArgument;
using acl_client::ResolveStream;
using acl_client::Transport;
using Kind = acl_client::CallbackDispatcher::Kind;

namespace {

CallbackDispatcher& callbacks() { return ClientRuntime::Get().callbacks(); }

// Queues `run` on `stream` as a callback of `kind`.
absl::Status Launch(Kind kind, aclrtStream stream, bool block, std::function<void()> run,
                    const char* api) {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, api));
  if (kind == Kind::kReport && !callbacks().HasSubscriber(Kind::kReport, stream_id)) {
    return acld::AclStatus(ACL_ERROR_RT_STREAM_NO_CB_REG,
                           absl::StrCat(api,
                                        ": no thread is subscribed to the stream's reports "
                                        "(aclrtSubscribeReport)"));
  }
  // The callback runs in the launching thread's context, as on the device's
  // runtime thread: the ACL calls it makes see the same current device.
  std::optional<acld::ContextInfo> context = ClientRuntime::Get().current_context();
  auto in_context = [context, run = std::move(run)] {
    if (context.has_value()) ClientRuntime::Get().set_current_context(*context);
    run();
  };
  const uint64_t id = callbacks().Add(kind, stream_id, block, std::move(in_context));
  absl::StatusOr<uint64_t> task =
      transport->LaunchCallback(stream_id, CurrentThreadId(), id, block);
  if (!task.ok()) callbacks().Remove(id);
  return acl_client::Enqueued(task);
}

absl::Status Subscribe(Kind kind, uint64_t thread, aclrtStream stream, bool subscribe,
                       const char* api) {
  ACL_RETURN_IF_ERROR(Connected().status());
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, api));
  return subscribe ? callbacks().Subscribe(kind, thread, stream_id)
                   : callbacks().Unsubscribe(kind, thread, stream_id);
}

uint32_t Fact(const aclrtExceptionInfo* info, uint32_t acl_client::TaskFailureFacts::*field) {
  if (info == nullptr) return static_cast<uint32_t>(ACL_ERROR_INVALID_EXCEPTION_INFO);
  return info->facts.*field;
}

// The failed kernel launch an exception info describes; INVALID_PARAM when
// the failed task was something else (a copy, a host callback, ...).
absl::StatusOr<const acl_client::KernelFacts*> FailedKernel(const aclrtExceptionInfo* info,
                                                             const char* api) {
  if (!info->facts.kernel.has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": acld has no arguments of the failed task: it was not a "
                                                "kernel launch, or its arguments were in device memory"));
  }
  return &*info->facts.kernel;
}

aclError LastError(const aclrtLastErrLevel& level, bool take) {
  if (acl_client::RawEnum(level) != ACL_RT_THREAD_LEVEL) return ACL_ERROR_INVALID_PARAM;
  return take ? acl_client::TakeLastError() : acl_client::PeekLastError();
}

// What kind of device fault a task failure's code is (aclrtGetErrorVerbose).
aclrtErrorInfo ErrorInfoOf(uint32_t error_code) {
  aclrtErrorInfo info{};
  switch (error_code) {
    case ACL_ERROR_RT_DEVICE_MEM_ERROR:
    case ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR:
    case ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR:
      info.errorType = ACL_RT_ERROR_MEMORY;
      break;
    case ACL_ERROR_RT_AICORE_TIMEOUT:
    case ACL_ERROR_RT_AICORE_EXCEPTION:
    case ACL_ERROR_RT_AICORE_TRAP_EXCEPTION:
    case ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW:
    case ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW:
      // A kernel's own fault: software, not the hardware.
      info.errorType = ACL_RT_ERROR_AICORE;
      info.hasDetail = 1;
      info.detail.aicoreErrType = ACL_RT_AICORE_ERROR_SW;
      break;
    default:
      info.errorType = ACL_RT_ERROR_OTHERS;
  }
  return info;
}

}  // namespace

extern "C" {

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void* args) {
  return Api([&]() -> absl::Status {
    if (fn == nullptr) return NullArgument("aclrtLaunchHostFunc", "fn");
    return Launch(
        Kind::kHostFunc, stream, /*block=*/true, [fn, args] { fn(args); }, "aclrtLaunchHostFunc");
  });
}

aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return Api([&] {
    return Subscribe(Kind::kHostFunc, hostFuncThreadId, exeStream, true, "aclrtSubscribeHostFunc");
  });
}

aclError aclrtProcessHostFunc(int32_t timeout) {
  return Api([&] { return callbacks().Process(Kind::kHostFunc, timeout); });
}

aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  return Api([&] {
    return Subscribe(Kind::kHostFunc, hostFuncThreadId, exeStream, false,
                     "aclrtUnSubscribeHostFunc");
  });
}

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return Api(
      [&] { return Subscribe(Kind::kReport, threadId, stream, true, "aclrtSubscribeReport"); });
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
  return Api(
      [&] { return Subscribe(Kind::kReport, threadId, stream, false, "aclrtUnSubscribeReport"); });
}

aclError aclrtProcessReport(int32_t timeout) {
  return Api([&] { return callbacks().Process(Kind::kReport, timeout); });
}

aclError aclrtLaunchCallback(aclrtCallback fn, void* userData, aclrtCallbackBlockType blockType,
                             aclrtStream stream) {
  return Api([&]() -> absl::Status {
    if (fn == nullptr) return NullArgument("aclrtLaunchCallback", "fn");
    const int block = acl_client::RawEnum(blockType);
    if (block != ACL_CALLBACK_NO_BLOCK && block != ACL_CALLBACK_BLOCK) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat("aclrtLaunchCallback: unknown block type ", block));
    }
    return Launch(
        Kind::kReport, stream, block == ACL_CALLBACK_BLOCK, [fn, userData] { fn(userData); },
        "aclrtLaunchCallback");
  });
}

aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback) {
  callbacks().SetExceptionCallback(callback);
  return ACL_SUCCESS;
}

aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo* errorInfo) {
  return Api([&]() -> absl::Status {
    if (errorInfo == nullptr) return NullArgument("aclrtGetErrorVerbose", "errorInfo");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, "aclrtGetErrorVerbose"));
    // Only this process's own failures: another session's are not its business.
    const std::optional<acl_client::TaskFailureFacts> failure =
        callbacks().LastFailureOn(static_cast<uint32_t>(deviceId));
    *errorInfo = failure.has_value() ? ErrorInfoOf(failure->error_code) : aclrtErrorInfo{};
    return absl::OkStatus();
  });
}

uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return Fact(info, &acl_client::TaskFailureFacts::task_id);
}

uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return Fact(info, &acl_client::TaskFailureFacts::stream_id);
}

uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return Fact(info, &acl_client::TaskFailureFacts::thread_id);
}

uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo* info) {
  return Fact(info, &acl_client::TaskFailureFacts::device_id);
}

uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo* info) {
  return Fact(info, &acl_client::TaskFailureFacts::error_code);
}

aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo* info, void** devArgsPtr,
                                       uint32_t* devArgsLen) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetArgsFromExceptionInfo";
    if (info == nullptr) return NullArgument(kApi, "info");
    if (devArgsPtr == nullptr || devArgsLen == nullptr) {
      return NullArgument(kApi, "devArgsPtr/devArgsLen");
    }
    ACL_ASSIGN_OR_RETURN(const acl_client::KernelFacts* kernel, FailedKernel(info, kApi));
    // The block as launched, kept with the exception info for the callback's
    // duration: acld holds a launch's arguments on the host, not the device.
    *devArgsPtr = const_cast<char*>(kernel->args.data());
    *devArgsLen = static_cast<uint32_t>(kernel->args.size());
    return absl::OkStatus();
  });
}

aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo* info,
                                             aclrtFuncHandle* func) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetFuncHandleFromExceptionInfo";
    if (info == nullptr) return NullArgument(kApi, "info");
    if (func == nullptr) return NullArgument(kApi, "func");
    ACL_ASSIGN_OR_RETURN(const acl_client::KernelFacts* kernel, FailedKernel(info, kApi));
    if (kernel->function == 0) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": the failed kernel is a built-in kernel "
                                                "(aclsimLaunchKernel), which has no function handle"));
    }
    *func = acl_client::ToHandle(kernel->function);
    return absl::OkStatus();
  });
}

aclError aclrtGetThreadLastTaskId(uint32_t* taskId) {
  return Api([&]() -> absl::Status {
    if (taskId == nullptr) return NullArgument("aclrtGetThreadLastTaskId", "taskId");
    *taskId = static_cast<uint32_t>(acl_client::ThreadLastTaskId());
    return absl::OkStatus();
  });
}

aclError aclrtGetLastError(aclrtLastErrLevel level) { return LastError(level, /*take=*/true); }

aclError aclrtPeekAtLastError(aclrtLastErrLevel level) { return LastError(level, /*take=*/false); }

}  // extern "C"
