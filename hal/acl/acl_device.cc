#include "hal/acl/acl_device.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "hal/acl/acl_event.h"
#include "hal/acl/acl_executable.h"
#include "hal/acl/acl_stream.h"
#include "hal/acl/vendor_copy.h"
#include "hal/acl/vendor_status.h"
#include "proto/acl/status_macros.h"

namespace hal::acl {

AclDevice::AclDevice(std::shared_ptr<const VendorApi> api, DeviceInfo info,
                     std::shared_ptr<ExceptionRouter> router,
                     std::shared_ptr<HostRegistry> host_registry)
    : api_(std::move(api)),
      id_(info.id),
      router_(std::move(router)),
      host_registry_(std::move(host_registry)),
      dispatcher_(std::make_shared<CompletionDispatcher>()),
      idle_budgets_(std::make_shared<IdleBudgets>(info.memory_bytes)),
      addresses_(info),
      ledger_(info.memory_bytes),
      builtin_(AclBuiltinKernels::FromVendor(*api_)) {}

AclDevice::~AclDevice() {
  // The backend is going (aclFinalize follows): whatever still holds the
  // context must not reset the device after that, and the report thread
  // must not outlive the vendor runtime (a stream let go of on another
  // thread would otherwise stop it later).
  std::shared_ptr<ReportThread> reports;
  {
    absl::MutexLock lock(&mu_);
    reports = reports_;
  }
  if (reports != nullptr) reports->Stop();
  if (std::shared_ptr<DeviceContext> context = TakeContext()) context->Destroy();
}

std::shared_ptr<DeviceContext> AclDevice::TakeContext() {
  std::shared_ptr<ReportThread> reports;  // stopped outside the lock
  absl::MutexLock lock(&mu_);
  reports = std::move(reports_);
  return std::move(context_);
}

absl::Status AclDevice::BringUp() {
  absl::MutexLock lock(&mu_);
  if (context_ != nullptr) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = DeviceContext::Create(api_, id_);
  if (!context.ok()) return context.status();
  absl::StatusOr<std::shared_ptr<ReportThread>> reports = ReportThread::Start(*context);
  if (!reports.ok()) return reports.status();
  clock_ = DeviceClock::Calibrate(**context);
  EnableVendorPeerAccess(**context);
  context_ = *std::move(context);
  reports_ = *std::move(reports);
  return absl::OkStatus();
}

void AclDevice::Release() {
  // Dropped outside the lock. The vendor device is reset when the last
  // stream, event or buffer holding the context lets go of it
  // (~DeviceContext): the core releases a device under its lock, before the
  // streams of an ended session are aborted, and aclrtResetDevice waits for
  // the work still queued on them. What an abort that could not reach the
  // vendor keeps (HoldUntilDestroyed) holds the context itself: reset now,
  // which ends that work, or it would be kept until acld ends.
  std::shared_ptr<DeviceContext> context = TakeContext();
  if (context != nullptr && context->held_count() > 0) context->Destroy();
}

bool AclDevice::is_up() const {
  absl::MutexLock lock(&mu_);
  return context_ != nullptr;
}

absl::StatusOr<std::shared_ptr<DeviceContext>> AclDevice::CurrentContext() const {
  std::shared_ptr<DeviceContext> context;
  {
    absl::MutexLock lock(&mu_);
    context = context_;
  }
  if (context == nullptr) {
    return BackendError(ACL_ERROR_RT_CONTEXT_NULL,
                        absl::StrCat("device ", id_, " is not brought up"));
  }
  absl::Status status = context->MakeCurrent();
  if (!status.ok()) return status;
  return context;
}

DeviceUtilization AclDevice::Utilization() const {
  DeviceUtilization utilization;
  utilization.memory_percent = PercentOf(ledger_.used(), ledger_.capacity());
  if (api_->aclrtGetDeviceUtilizationRate == nullptr) return utilization;
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return utilization;
  VendorUtilizationInfo info{};
  if (api_->aclrtGetDeviceUtilizationRate(id_, &info) != ACL_SUCCESS) return utilization;
  auto percent = [](int32_t value) { return std::clamp<int32_t>(value, 0, 100); };
  utilization.compute_percent = percent(std::max(info.cube_utilization, info.vector_utilization));
  utilization.memory_percent = percent(info.memory_utilization);
  return utilization;
}

bool AclDevice::CanAccessPeer(const Device& peer) const {
  const int32_t peer_id = peer.info().id;
  if (api_->aclrtDeviceCanAccessPeer == nullptr || peer_id == id_) return false;
  int32_t can = 0;
  return api_->aclrtDeviceCanAccessPeer(&can, id_, peer_id) == ACL_SUCCESS && can == 1;
}

void AclDevice::EnableVendorPeerAccess(DeviceContext& context) {
  uint32_t count = 0;
  if (api_->aclrtDeviceCanAccessPeer == nullptr || api_->aclrtDeviceEnablePeerAccess == nullptr ||
      api_->aclrtGetDeviceCount(&count) != ACL_SUCCESS || !context.MakeCurrent().ok()) {
    return;
  }
  for (int32_t peer = 0; peer < static_cast<int32_t>(std::min<uint32_t>(count, 64)); ++peer) {
    int32_t can = 0;
    if (peer != id_ && api_->aclrtDeviceCanAccessPeer(&can, id_, peer) == ACL_SUCCESS &&
        can == 1) {
      api_->aclrtDeviceEnablePeerAccess(peer, 0);
    }
  }
}

DeviceFeatures AclDevice::features() const {
  DeviceFeatures features;
  const aclCannAttr* attributes = nullptr;
  size_t count = 0;
  if (api_->aclGetCannAttributeList != nullptr &&
      api_->aclGetCannAttributeList(&attributes, &count) == ACL_SUCCESS && attributes != nullptr) {
    // Bounded: a vendor list longer than the attributes CANN defines is cut.
    for (size_t i = 0; i < std::min<size_t>(count, 64); ++i) {
      features.cann_attributes.push_back(static_cast<int32_t>(attributes[i]));
    }
  }
  if (api_->aclrtGetDeviceCapability != nullptr) {
    for (aclrtDevFeatureType feature :
         {ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV}) {
      int32_t value = ACL_DEV_FEATURE_NOT_SUPPORT;
      if (api_->aclrtGetDeviceCapability(id_, feature, &value) == ACL_SUCCESS &&
          value == ACL_DEV_FEATURE_SUPPORT) {
        features.capabilities.push_back(static_cast<int32_t>(feature));
      }
    }
  }
  if (api_->aclrtGetDeviceInfo != nullptr) {
    for (aclrtDevAttr attribute :
         {ACL_DEV_ATTR_AICPU_CORE_NUM, ACL_DEV_ATTR_AICORE_CORE_NUM, ACL_DEV_ATTR_CUBE_CORE_NUM,
          ACL_DEV_ATTR_VECTOR_CORE_NUM, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE,
          ACL_DEV_ATTR_L2_CACHE_SIZE}) {
      int64_t value = 0;
      if (api_->aclrtGetDeviceInfo(static_cast<uint32_t>(id_), attribute, &value) == ACL_SUCCESS) {
        features.device_info[attribute] = value;
      }
    }
  }
  return features;
}

std::optional<uint64_t> AclDevice::ReservedBytes(uint64_t size) const {
  return ledger_.ReservedBytes(size);
}

absl::StatusOr<DeviceBuffer> AclDevice::Allocate(uint64_t size) {
  const std::optional<uint64_t> reserved = ledger_.ReservedBytes(size);
  if (!reserved.has_value() || !ledger_.TryReserve(*reserved)) {
    return BackendError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                        absl::StrCat("device ", id_, " cannot hold ", size, " more bytes (",
                                     ledger_.capacity() - ledger_.used(), " free)"));
  }
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) {
    ledger_.Unreserve(*reserved);
    return context.status();
  }
  const VendorApi& api = *api_;
  void* pointer = nullptr;
  absl::Status status =
      CheckVendor(api.aclrtMalloc(&pointer, static_cast<size_t>(size), ACL_MEM_MALLOC_HUGE_FIRST),
                  "aclrtMalloc");
  if (status.ok()) {
    // The previous owner's bytes must not show through (see the header).
    status = CheckVendor(
        api.aclrtMemset(pointer, static_cast<size_t>(size), 0, static_cast<size_t>(size)),
        "aclrtMemset");
    if (!status.ok()) api.aclrtFree(pointer);
  }
  if (!status.ok()) {
    ledger_.Unreserve(*reserved);
    return status;
  }
  const auto address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer));
  ledger_.AddLive(address, *reserved);
  addresses_.Cover(address, address + *reserved);

  DeviceBuffer buffer;
  buffer.address = address;
  buffer.size = size;
  buffer.reserved = *reserved;
  // The context (not the device) is kept: the vendor device stays open until
  // the last buffer is freed (AclDevice::Release).
  buffer.storage = std::shared_ptr<void>(pointer, [context = *context](void* memory) {
    if (context->MakeCurrent().ok()) context->api().aclrtFree(memory);
  });
  return buffer;
}

void AclDevice::Free(const DeviceBuffer& buffer) {
  // The vendor memory goes with the buffer's last copy (storage).
  if (std::optional<uint64_t> reserved = ledger_.RemoveLive(buffer.address)) {
    ledger_.Unreserve(*reserved);
  }
}

absl::Status AclDevice::Copy(const Transfer& transfer) {
  absl::StatusOr<VendorCopy> copy = ToVendorCopy(transfer);
  if (!copy.ok()) return copy.status();
  if (copy->count == 0) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  return CheckVendor(
      api_->aclrtMemcpy(copy->dst, copy->dst_max, copy->src, copy->count, copy->kind),
      "aclrtMemcpy");
}

absl::Status AclDevice::Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) {
  if (count == 0) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  return CheckVendor(
      api_->aclrtMemset(VendorPointer(dst), BytesAfter(dst), value, static_cast<size_t>(count)),
      "aclrtMemset");
}

absl::StatusOr<std::unique_ptr<Stream>> AclDevice::CreateStream(StreamOptions options) {
  if (options.saturate_floats) {
    // The vendor's saturation mode is the daemon process's, so one session
    // setting it would change another's streams (features: no float_overflow).
    return BackendError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        "saturation mode is not passed to the vendor runtime");
  }
  std::shared_ptr<DeviceContext> context;
  std::shared_ptr<ReportThread> reports;
  {
    absl::MutexLock lock(&mu_);  // both of the same bring-up
    context = context_;
    reports = reports_;
  }
  if (context == nullptr) {
    return BackendError(ACL_ERROR_RT_CONTEXT_NULL,
                        absl::StrCat("device ", id_, " is not brought up"));
  }
  ACL_RETURN_IF_ERROR(context->MakeCurrent());
  absl::StatusOr<std::unique_ptr<AclStream>> stream = AclStream::Create(
      StreamDeps{std::move(context), dispatcher_, router_, std::move(reports), idle_budgets_},
      std::move(options));
  if (!stream.ok()) return stream.status();
  return std::unique_ptr<Stream>(*std::move(stream));
}

absl::StatusOr<std::shared_ptr<Event>> AclDevice::CreateEvent() {
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  std::shared_ptr<const DeviceClock> clock;
  {
    absl::MutexLock lock(&mu_);
    clock = clock_;
  }
  absl::StatusOr<std::shared_ptr<AclEvent>> event = AclEvent::Create(*context, std::move(clock));
  if (!event.ok()) return event.status();
  return std::shared_ptr<Event>(*std::move(event));
}

absl::StatusOr<std::shared_ptr<Executable>> AclDevice::LoadExecutable(absl::string_view binary) {
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  absl::StatusOr<std::shared_ptr<AclExecutable>> executable = AclExecutable::Load(*context, binary);
  if (!executable.ok()) return executable.status();
  return std::shared_ptr<Executable>(*std::move(executable));
}

absl::Status AclDevice::RegisterHostMemory(void* address, uint64_t bytes) {
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  return host_registry_->Register(**context, address, bytes);
}

absl::Status AclDevice::UnregisterHostMemory(void* address) {
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  return host_registry_->Unregister(**context, address);
}

bool AclDevice::IsHostMemoryRegistered(const void* address, uint64_t bytes) const {
  return host_registry_->Covers(address, bytes);
}

absl::StatusOr<AclDevice::VendorMemory> AclDevice::VendorMemInfo() const {
  absl::StatusOr<std::shared_ptr<DeviceContext>> context = CurrentContext();
  if (!context.ok()) return context.status();
  size_t free = 0;
  size_t total = 0;
  absl::Status status =
      CheckVendor(api_->aclrtGetMemInfo(ACL_HBM_MEM, &free, &total), "aclrtGetMemInfo");
  if (!status.ok()) return status;
  return VendorMemory{free, total};
}

}  // namespace hal::acl
