#include "client/embedded_transport.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/synchronization/notification.h"
#include "acl/acl_base.h"
#include "daemon/core/process_clock.h"
#include "client/kernel_output.h"
#include "client/process_info.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"
#include "hal/registry.h"

namespace acl_client {
namespace {

template <typename Number>
Number EnvNumber(const char* name, Number fallback) {
  const char* text = std::getenv(name);
  Number value{};
  return text != nullptr && absl::SimpleAtoi(text, &value) && value > 0 ? value : fallback;
}

}  // namespace

absl::Status WaitForCompletion(const std::function<void(acld::Done)>& start) {
  struct Result {
    absl::Notification done;
    absl::Status status;
  };
  auto result = std::make_shared<Result>();
  start([result](absl::Status status) {
    result->status = std::move(status);
    result->done.Notify();
  });
  result->done.WaitForNotification();
  return result->status;
}

absl::Duration TimeoutFromMs(int32_t timeout_ms) {
  return timeout_ms < 0 ? absl::InfiniteDuration() : absl::Milliseconds(timeout_ms);
}

absl::StatusOr<std::unique_ptr<EmbeddedTransport>> EmbeddedTransport::Create(
    CallbackDispatcher* callbacks) {
  hal::BackendOptions options;
  options.sim_device_count = EnvNumber("ACLD_SIM_DEVICES", options.sim_device_count);
  options.sim_device_memory_bytes =
      EnvNumber("ACLD_SIM_DEVICE_MEMORY", options.sim_device_memory_bytes);
  const char* library = std::getenv("ACLD_BACKEND_LIBRARY");
  if (library != nullptr) options.vendor_library = library;
  options.deep_bind = true;
  const char* name = std::getenv("ACLD_BACKEND");
  const std::string backend_name = name != nullptr && *name != '\0' ? name : "sim";
  absl::StatusOr<std::unique_ptr<hal::Backend>> backend =
      hal::CreateBackend(backend_name, options);
  if (!backend.ok()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("ACLD_BACKEND=", backend_name,
                                        ": the devices cannot be opened: ",
                                        backend.status().message()));
  }
  return std::make_unique<EmbeddedTransport>(*std::move(backend), callbacks);
}

EmbeddedTransport::EmbeddedTransport(std::unique_ptr<hal::Backend> backend,
                                     CallbackDispatcher* callbacks) {
  runtime_ = std::make_unique<acld::Runtime>(std::move(backend));
  session_ = runtime_->OpenSession({getpid(), getuid(), getgid(), ProcessCommandLine(),
                                    acld::ProcessStartTicks(getpid()).value_or(0)});
  kernels_ = runtime_->Kernels();
  device_addresses_ = runtime_->DeviceAddressRanges();
  if (callbacks != nullptr) {
    acld::SessionEvents events;
    events.callback_due = [callbacks](const acld::CallbackDue& due) {
      callbacks->OnCallbackDue(due.callback_id, due.stream);
    };
    events.task_failed = [callbacks](const acld::TaskFailure& failure) {
      TaskFailureFacts facts = FactsOf(failure.task_id, failure.stream, failure.submitter_thread,
                                       failure.device, acld::AclCodeOf(failure.status));
      if (failure.kernel_args.has_value()) {
        facts.kernel = KernelFacts{*failure.kernel_args, failure.function_handle};
      }
      callbacks->OnTaskFailed(std::move(facts));
    };
    events.kernel_output = [](const acld::KernelOutput& output) { PrintKernelOutput(output.text); };
    runtime_->SetSessionEvents(session_, std::move(events));
  }
}

EmbeddedTransport::~EmbeddedTransport() { Close(); }

void EmbeddedTransport::Close() { runtime_->CloseSession(session_); }

absl::StatusOr<uint64_t> EmbeddedTransport::InitCount() { return runtime_->InitCount(session_); }
absl::StatusOr<uint64_t> EmbeddedTransport::AddInitReference() {
  return runtime_->AddInitReference(session_);
}
absl::Status EmbeddedTransport::Initialize(const acld::InitSettings& settings) {
  return runtime_->Initialize(session_, settings);
}
absl::Status EmbeddedTransport::AbortInit() { return runtime_->AbortInit(session_); }
absl::StatusOr<uint64_t> EmbeddedTransport::DropInitReference() {
  return runtime_->DropInitReference(session_);
}
absl::Status EmbeddedTransport::Finalize() {
  return WaitForCompletion([&](acld::Done done) { runtime_->Finalize(session_, std::move(done)); });
}

absl::StatusOr<acld::ContextInfo> EmbeddedTransport::SetDevice(int32_t device_id) {
  return runtime_->SetDevice(session_, device_id);
}
absl::Status EmbeddedTransport::ResetDevice(int32_t device_id, bool force) {
  return WaitForCompletion([&](acld::Done done) {
    runtime_->ResetDevice(session_, device_id, force, std::move(done));
  });
}
absl::Status EmbeddedTransport::SynchronizeDevice(int32_t device_id, int32_t timeout_ms) {
  return WaitForCompletion([&](acld::Done done) {
    runtime_->SynchronizeDevice(session_, device_id, TimeoutFromMs(timeout_ms), std::move(done));
  });
}
absl::StatusOr<acld::ContextInfo> EmbeddedTransport::CreateContext(int32_t device_id) {
  return runtime_->CreateContext(session_, device_id);
}
absl::Status EmbeddedTransport::DestroyContext(uint64_t context) {
  return WaitForCompletion(
      [&](acld::Done done) { runtime_->DestroyContext(session_, context, std::move(done)); });
}

absl::StatusOr<uint64_t> EmbeddedTransport::CreateStream(uint64_t context, uint32_t priority,
                                                         uint32_t flags,
                                                         bool saturate_floats) {
  return runtime_->CreateStream(session_, context, priority, flags, saturate_floats);
}
absl::Status EmbeddedTransport::DestroyStream(uint64_t stream, bool force) {
  return WaitForCompletion(
      [&](acld::Done done) { runtime_->DestroyStream(session_, stream, force, std::move(done)); });
}
absl::Status EmbeddedTransport::SynchronizeStream(uint64_t stream, int32_t timeout_ms) {
  return WaitForCompletion([&](acld::Done done) {
    runtime_->SynchronizeStream(session_, stream, TimeoutFromMs(timeout_ms), std::move(done));
  });
}
absl::StatusOr<bool> EmbeddedTransport::StreamIdle(uint64_t stream) {
  return runtime_->StreamIdle(session_, stream);
}
absl::Status EmbeddedTransport::AbortStream(uint64_t stream) {
  return runtime_->AbortStream(session_, stream);
}
absl::Status EmbeddedTransport::StopStream(uint64_t stream) {
  return runtime_->StopStream(session_, stream);
}
absl::Status EmbeddedTransport::SetStreamFailureMode(uint64_t stream, uint64_t mode) {
  return runtime_->SetStreamFailureMode(session_, stream, mode);
}
absl::Status EmbeddedTransport::SetStreamAllocator(uint64_t stream, bool registered) {
  return runtime_->SetStreamAllocator(session_, stream, registered);
}

absl::StatusOr<uint64_t> EmbeddedTransport::LaunchKernel(uint64_t stream, uint64_t thread,
                                                         const acld::KernelRequest& kernel) {
  return runtime_->LaunchKernel(session_, stream, thread, kernel);
}

absl::StatusOr<uint64_t> EmbeddedTransport::LoadBinary(int32_t device_id,
                                                       absl::string_view binary) {
  return runtime_->LoadBinary(session_, device_id, binary);
}

absl::Status EmbeddedTransport::UnloadBinary(uint64_t binary) {
  return runtime_->UnloadBinary(session_, binary);
}

absl::StatusOr<std::string> EmbeddedTransport::ExportMemory(uint64_t address, uint64_t size,
                                                            uint64_t flags) {
  return runtime_->ExportMemory(session_, address, size, flags);
}

absl::Status EmbeddedTransport::SetImportPids(const std::string& key,
                                              const std::vector<int32_t>& pids) {
  return runtime_->SetImportPids(session_, key, pids);
}

absl::Status EmbeddedTransport::SetExportAttribute(const std::string& key, int32_t type,
                                                   uint64_t value) {
  return runtime_->SetExportAttribute(session_, key, type, value);
}

namespace {

// An import refused in embedded mode: one process, so nobody else can have
// shared `what` with it; the message says where sharing works.
absl::Status EmbeddedImportRefused(const absl::Status& refused, const char* what) {
  return acld::AclStatus(
      acld::AclCodeOf(refused),
      absl::StrCat(refused.message(), "; in embedded mode (ACLD_ADDRESS=embedded) every process ",
                   "has its own runtime, so ", what, " can be shared only through acld"));
}

}  // namespace

absl::StatusOr<uint64_t> EmbeddedTransport::ImportMemory(const std::string& key) {
  absl::StatusOr<uint64_t> address = runtime_->ImportMemory(session_, key);
  if (!address.ok()) return EmbeddedImportRefused(address.status(), "device memory");
  return address;
}

absl::StatusOr<uint64_t> EmbeddedTransport::MallocPhysical(int32_t device_id, uint64_t size,
                                                           bool huge_pages) {
  return runtime_->MallocPhysical(session_, device_id, size, huge_pages);
}

absl::StatusOr<uint64_t> EmbeddedTransport::RetainPhysical(uint64_t address) {
  return runtime_->RetainPhysical(session_, address);
}

absl::StatusOr<acld::PhysicalProperties> EmbeddedTransport::PhysicalProperties(uint64_t handle) {
  ACL_ASSIGN_OR_RETURN(acld::PhysicalMemory::Properties properties,
                       runtime_->PhysicalProperties(session_, handle));
  return acld::PhysicalProperties{properties.device, properties.huge_pages};
}

absl::StatusOr<bool> EmbeddedTransport::MemoryAccess(uint64_t address, int32_t device_id) {
  return runtime_->MemoryAccess(session_, address, device_id);
}

absl::Status EmbeddedTransport::FreePhysical(uint64_t handle) {
  return runtime_->FreePhysical(session_, handle);
}

absl::StatusOr<uint64_t> EmbeddedTransport::ReserveAddresses(int32_t device_id, uint64_t size) {
  return runtime_->ReserveAddresses(session_, device_id, size);
}

absl::Status EmbeddedTransport::ReleaseAddresses(uint64_t address) {
  return runtime_->ReleaseAddresses(session_, address);
}

absl::Status EmbeddedTransport::MapMemory(uint64_t address, uint64_t size, uint64_t offset,
                                          uint64_t handle, bool accessible) {
  return runtime_->MapMemory(session_, address, size, offset, handle, accessible);
}

absl::Status EmbeddedTransport::UnmapMemory(uint64_t address) {
  return runtime_->UnmapMemory(session_, address);
}

absl::Status EmbeddedTransport::SetMemoryAccess(uint64_t address, uint64_t size,
                                                int32_t device_id, bool readwrite) {
  return runtime_->SetMemoryAccess(session_, address, size, device_id, readwrite);
}

absl::StatusOr<uint64_t> EmbeddedTransport::ExportPhysical(uint64_t handle, bool pid_validation) {
  return runtime_->ExportPhysical(session_, handle, pid_validation);
}

absl::Status EmbeddedTransport::SetShareablePids(uint64_t shareable,
                                                 const std::vector<int32_t>& pids) {
  return runtime_->SetShareablePids(session_, shareable, pids);
}

absl::StatusOr<uint64_t> EmbeddedTransport::ImportPhysical(uint64_t shareable, int32_t device_id) {
  absl::StatusOr<uint64_t> handle = runtime_->ImportPhysical(session_, shareable, device_id);
  if (!handle.ok()) return EmbeddedImportRefused(handle.status(), "physical memory");
  return handle;
}

absl::Status EmbeddedTransport::CloseMemoryKey(const std::string& key) {
  return runtime_->CloseMemoryKey(session_, key);
}

absl::StatusOr<int32_t> EmbeddedTransport::PeerPid() { return runtime_->PeerPid(session_); }

absl::StatusOr<std::string> EmbeddedTransport::ShareNotify(uint64_t notify, bool pid_validation) {
  return runtime_->ShareNotify(session_, notify, pid_validation);
}

absl::Status EmbeddedTransport::SetNotifyImportPids(uint64_t notify,
                                                    const std::vector<int32_t>& pids) {
  return runtime_->SetNotifyImportPids(session_, notify, pids);
}

absl::StatusOr<acld::SharedNotifyInfo> EmbeddedTransport::ImportNotify(const std::string& key) {
  absl::StatusOr<acld::Runtime::OpenedNotify> opened = runtime_->ImportNotify(session_, key);
  if (!opened.ok()) return EmbeddedImportRefused(opened.status(), "notifies");
  return acld::SharedNotifyInfo{opened->id, opened->device};
}

absl::StatusOr<std::string> EmbeddedTransport::ShareEvent(uint64_t event) {
  return runtime_->ShareEvent(session_, event);
}

absl::StatusOr<acld::SharedEventInfo> EmbeddedTransport::OpenSharedEvent(const std::string& key) {
  absl::StatusOr<acld::Runtime::OpenedEvent> opened = runtime_->OpenSharedEvent(session_, key);
  if (!opened.ok()) return EmbeddedImportRefused(opened.status(), "events");
  return acld::SharedEventInfo{opened->id, opened->device, opened->flags};
}

absl::StatusOr<uint64_t> EmbeddedTransport::GetFunction(uint64_t binary, const std::string& name) {
  return runtime_->GetFunction(session_, binary, name);
}

absl::StatusOr<uint64_t> EmbeddedTransport::LaunchFunction(uint64_t stream, uint64_t thread,
                                                           const acld::FunctionLaunch& launch) {
  return runtime_->LaunchFunction(session_, stream, thread, launch);
}

acld::CopyRequest EmbeddedTransport::ToCore(const HostCopy& copy, bool stage_pageable) const {
  acld::CopyRequest core;
  core.direction = copy.direction;
  core.device_dst = copy.device_dst;
  core.device_src = copy.device_src;
  core.count = copy.count;
  if (copy.direction == acld::CopyDirection::kDeviceToHost) {
    core.host.data = static_cast<uint8_t*>(copy.host_dst);
  } else if (copy.direction == acld::CopyDirection::kHostToDevice) {
    if (stage_pageable && !host_blocks_.Find(copy.host_src, copy.count).has_value()) {
      auto staged = std::shared_ptr<uint8_t[]>(new uint8_t[copy.count]);
      std::memcpy(staged.get(), copy.host_src, copy.count);
      core.host = acld::HostSpan{staged.get(), staged};
    } else {
      core.host.data = static_cast<uint8_t*>(const_cast<void*>(copy.host_src));
    }
  }
  return core;
}

absl::StatusOr<uint64_t> EmbeddedTransport::CopyAsync(uint64_t stream, uint64_t thread,
                                                      const HostCopy& copy) {
  return runtime_->EnqueueCopy(session_, stream, thread, ToCore(copy, /*stage_pageable=*/true));
}
absl::StatusOr<uint64_t> EmbeddedTransport::MemsetAsync(uint64_t stream, uint64_t thread,
                                                        const acld::MemsetRequest& memset) {
  return runtime_->EnqueueMemset(session_, stream, thread, memset);
}

absl::StatusOr<uint64_t> EmbeddedTransport::ValueWaitAsync(uint64_t stream, uint64_t thread,
                                                           const acld::ValueWaitRequest& wait) {
  return runtime_->EnqueueValueWait(session_, stream, thread, wait);
}

absl::StatusOr<uint64_t> EmbeddedTransport::OverflowAsync(uint64_t stream, uint64_t thread,
                                                          const acld::OverflowRequest& overflow) {
  return runtime_->EnqueueOverflow(session_, stream, thread, overflow);
}

absl::StatusOr<uint64_t> EmbeddedTransport::RandomAsync(uint64_t stream, uint64_t thread,
                                                        const acld::RandomRequest& random) {
  return runtime_->EnqueueRandom(session_, stream, thread, random);
}

absl::StatusOr<uint64_t> EmbeddedTransport::ReduceAsync(uint64_t stream, uint64_t thread,
                                                        const acld::ReduceRequest& reduce) {
  return runtime_->EnqueueReduce(session_, stream, thread, reduce);
}
absl::StatusOr<uint64_t> EmbeddedTransport::RecordEvent(uint64_t event, uint64_t stream,
                                                        uint64_t thread) {
  return runtime_->RecordEvent(session_, event, stream, thread);
}
absl::StatusOr<uint64_t> EmbeddedTransport::ResetEvent(uint64_t event, uint64_t stream,
                                                       uint64_t thread) {
  return runtime_->ResetEvent(session_, event, stream, thread);
}
absl::StatusOr<uint64_t> EmbeddedTransport::StreamWaitEvent(uint64_t stream, uint64_t event,
                                                            uint64_t thread) {
  return runtime_->StreamWaitEvent(session_, stream, event, thread);
}
absl::StatusOr<uint64_t> EmbeddedTransport::LaunchCallback(uint64_t stream, uint64_t thread,
                                                           uint64_t callback_id, bool block) {
  return runtime_->EnqueueCallback(session_, stream, thread, callback_id, block);
}
void EmbeddedTransport::AcknowledgeCallback(uint64_t callback_id) {
  runtime_->AcknowledgeCallback(session_, callback_id).IgnoreError();  // late: timed out
}

absl::StatusOr<uint64_t> EmbeddedTransport::RecordNotify(uint64_t notify, uint64_t stream,
                                                         uint64_t thread) {
  return runtime_->RecordNotify(session_, notify, stream, thread);
}

absl::StatusOr<uint64_t> EmbeddedTransport::WaitAndResetNotify(uint64_t notify, uint64_t stream,
                                                               uint32_t timeout_s,
                                                               uint64_t thread) {
  return runtime_->WaitAndResetNotify(session_, notify, stream, timeout_s, thread);
}

absl::StatusOr<uint64_t> EmbeddedTransport::CreateNotify(int32_t device_id) {
  return runtime_->CreateNotify(session_, device_id);
}

absl::Status EmbeddedTransport::DestroyNotify(uint64_t notify) {
  return runtime_->DestroyNotify(session_, notify);
}

absl::StatusOr<uint64_t> EmbeddedTransport::CreateEvent(int32_t device_id, uint32_t flags) {
  return runtime_->CreateEvent(session_, device_id, flags);
}
absl::Status EmbeddedTransport::DestroyEvent(uint64_t event) {
  return runtime_->DestroyEvent(session_, event);
}
absl::Status EmbeddedTransport::SynchronizeEvent(uint64_t event, int32_t timeout_ms) {
  return WaitForCompletion([&](acld::Done done) {
    runtime_->SynchronizeEvent(session_, event, TimeoutFromMs(timeout_ms), std::move(done));
  });
}
absl::StatusOr<acld::EventStatus> EmbeddedTransport::QueryEvent(uint64_t event) {
  return runtime_->QueryEvent(session_, event);
}
absl::StatusOr<float> EmbeddedTransport::EventElapsedMs(uint64_t start, uint64_t end) {
  return runtime_->EventElapsedMs(session_, start, end);
}

absl::StatusOr<uint64_t> EmbeddedTransport::EventTimestampUs(uint64_t event) {
  return runtime_->EventTimestampUs(session_, event);
}

absl::StatusOr<uint64_t> EmbeddedTransport::Malloc(int32_t device_id, uint64_t size) {
  return runtime_->Malloc(session_, device_id, size);
}
absl::Status EmbeddedTransport::Free(uint64_t address) { return runtime_->Free(session_, address); }
absl::Status EmbeddedTransport::Copy(const HostCopy& copy) {
  return runtime_->Copy(session_, ToCore(copy, /*stage_pageable=*/false));
}
absl::Status EmbeddedTransport::Memset(const acld::MemsetRequest& memset) {
  return runtime_->Memset(session_, memset);
}
absl::StatusOr<acld::MemInfo> EmbeddedTransport::GetMemInfo(int32_t device_id) {
  return runtime_->GetMemInfo(session_, device_id);
}

absl::StatusOr<acld::Utilization> EmbeddedTransport::GetUtilization(int32_t device_id) {
  return runtime_->GetUtilization(device_id);
}

absl::StatusOr<acld::ObjectsAvailable> EmbeddedTransport::GetObjectsAvailable(int32_t device_id) {
  return runtime_->GetObjectsAvailable(session_, device_id);
}

absl::StatusOr<void*> EmbeddedTransport::MallocHost(uint64_t size) {
  void* pointer = nullptr;
  if (posix_memalign(&pointer, 4096, size) != 0) {
    return acld::AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMallocHost: out of host memory");
  }
  host_blocks_.Add(pointer, {size, 0});
  return pointer;
}

absl::Status EmbeddedTransport::FreeHost(void* pointer) {
  if (!host_blocks_.Remove(pointer).has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "aclrtFreeHost: the pointer was not returned by aclrtMallocHost");
  }
  std::free(pointer);
  return absl::OkStatus();
}

}  // namespace acl_client
