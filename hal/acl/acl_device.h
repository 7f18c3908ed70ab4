// One device of the vendor AscendCL runtime as a hal::Device.
//
// BringUp: aclrtSetDevice and one explicit context (aclrtCreateContext) that
// every backend thread working for the device makes current; the event clock
// is calibrated then (device_clock.h). Release lets go of the context:
// aclrtDestroyContext and aclrtResetDevice follow once nothing holds it.
//
// Memory: aclrtMalloc(ACL_MEM_MALLOC_HUGE_FIRST), then aclrtMemset to zero.
// The daemon is the vendor runtime's only process, so the driver does not
// scrub device memory between tenants: the backend does, before an
// allocation is handed out (a conformance requirement, hal/device.h). A
// buffer's storage calls aclrtFree when its last copy goes, so work still
// holding a freed buffer finishes on valid memory; used_bytes() counts what
// the core has not freed yet. Reserved bytes follow the vendor's rounding
// (allocation_ledger.h). The device's address window grows with the
// allocations (address_span.h): the core infers ACL_MEMCPY_DEFAULT directions
// from it.
//
// NowNanos is the host's CLOCK_MONOTONIC; event timestamps come from
// aclrtEventGetTimestamp mapped onto it when the vendor has it.
#ifndef ACLD_HAL_ACL_ACL_DEVICE_H_
#define ACLD_HAL_ACL_ACL_DEVICE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/address_span.h"
#include "hal/acl/allocation_ledger.h"
#include "hal/acl/completion_dispatcher.h"
#include "hal/acl/device_clock.h"
#include "hal/acl/device_context.h"
#include "hal/acl/exception_router.h"
#include "hal/acl/report_thread.h"
#include "hal/acl/acl_builtin_kernels.h"
#include "hal/acl/host_registry.h"
#include "hal/acl/idle_budget.h"
#include "hal/device.h"

namespace hal::acl {

class AclDevice final : public Device {
 public:
  AclDevice(std::shared_ptr<const VendorApi> api, DeviceInfo info,
            std::shared_ptr<ExceptionRouter> router, std::shared_ptr<HostRegistry> host_registry);
  // Releases the device if it is up.
  ~AclDevice() override;

  const DeviceInfo& info() const override { return addresses_.info(); }
  absl::Status BringUp() override;
  void Release() override;
  bool is_up() const override;

  absl::StatusOr<DeviceBuffer> Allocate(uint64_t size) override;
  std::optional<uint64_t> ReservedBytes(uint64_t size) const override;
  void Free(const DeviceBuffer& buffer) override;
  uint64_t used_bytes() const override { return ledger_.used(); }

  absl::Status Copy(const Transfer& transfer) override;
  absl::Status Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) override;

  int64_t NowNanos() const override { return DeviceClock::HostNowNanos(); }
  // aclrtGetDeviceUtilizationRate (the busier of cube and vector) when the
  // vendor has it and the device is up; memory from the ledger otherwise.
  DeviceUtilization Utilization() const override;
  // The vendor's aclGetCannAttributeList, aclrtGetDeviceCapability (for the
  // features acl_rt.h names) and aclrtGetDeviceInfo (core counts, memory),
  // when it has them; none otherwise.
  DeviceFeatures features() const override;
  // The vendor's aclrtDeviceCanAccessPeer (false when it has none).
  bool CanAccessPeer(const Device& peer) const override;

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(StreamOptions options) override;
  absl::StatusOr<std::shared_ptr<Event>> CreateEvent() override;
  absl::StatusOr<std::shared_ptr<Executable>> LoadExecutable(absl::string_view binary) override;
  const Executable* builtin_kernels() const override { return builtin_.get(); }
  // The vendor runtime queues what it is given and runs it in its own order.
  uint32_t tasks_per_session() const override { return kTasksPerSession; }
  static constexpr uint32_t kTasksPerSession = 64;

  // Registers host memory the daemon mapped (a client's shared memory) with
  // the vendor, so that async copies with it stay asynchronous
  // (host_registry.h). The device must be up. Shared by the backend's devices.
  absl::Status RegisterHostMemory(void* address, uint64_t bytes);
  // Undoes one RegisterHostMemory(address, ...).
  absl::Status UnregisterHostMemory(void* address);
  bool IsHostMemoryRegistered(const void* address, uint64_t bytes) const;
  // The vendor copies unregistered host memory synchronously.
  bool CopyBlocksSubmitter(const void* host, uint64_t bytes) const override {
    return host == nullptr || !IsHostMemoryRegistered(host, bytes);
  }

  // True when `address` lies in a live allocation of this device (exact,
  // unlike info().addresses).
  bool IsDeviceAddress(uint64_t address) const { return ledger_.IsLive(address); }

  // Free and total HBM as the vendor reports them (aclrtGetMemInfo).
  struct VendorMemory {
    uint64_t free = 0;
    uint64_t total = 0;
  };
  absl::StatusOr<VendorMemory> VendorMemInfo() const;

 private:
  // Lets the vendor device reach every device the vendor says it can (when
  // the vendor has the calls): acld itself holds each session to the peer
  // access it enabled (docs/api-compat.md), so the vendor's, which every
  // session shares, is simply on.
  void EnableVendorPeerAccess(DeviceContext& context);
  // Takes the context (null when the device is not up); the device is down after.
  std::shared_ptr<DeviceContext> TakeContext();
  // The context when the device is up, current on the calling thread.
  absl::StatusOr<std::shared_ptr<DeviceContext>> CurrentContext() const;

  const std::shared_ptr<const VendorApi> api_;
  const int32_t id_;
  const std::shared_ptr<ExceptionRouter> router_;
  const std::shared_ptr<HostRegistry> host_registry_;
  const std::shared_ptr<CompletionDispatcher> dispatcher_;
  // StreamDeps::idle_budgets of its streams.
  const std::shared_ptr<IdleBudgets> idle_budgets_;
  AddressSpan addresses_;
  AllocationLedger ledger_;
  const std::unique_ptr<AclBuiltinKernels> builtin_;

  mutable absl::Mutex mu_;
  std::shared_ptr<DeviceContext> context_ ABSL_GUARDED_BY(mu_);
  // Runs the callbacks of the streams made while this context is up.
  std::shared_ptr<ReportThread> reports_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const DeviceClock> clock_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_DEVICE_H_
