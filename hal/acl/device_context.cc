#include "hal/acl/device_context.h"

#include "absl/strings/str_cat.h"
#include "hal/acl/vendor_status.h"

namespace hal::acl {
namespace {

std::atomic<uint64_t> next_context_id{1};
// The id of the context this thread made current last (0: none known).
thread_local uint64_t thread_context_id = 0;

}  // namespace

DeviceContext::DeviceContext(std::shared_ptr<const VendorApi> api, int32_t device,
                             aclrtContext context)
    : api_(std::move(api)),
      device_(device),
      context_(context),
      id_(next_context_id.fetch_add(1, std::memory_order_relaxed)) {}

absl::StatusOr<std::shared_ptr<DeviceContext>> DeviceContext::Create(
    std::shared_ptr<const VendorApi> api, int32_t device) {
  const VendorApi& vendor = *api;
  ForgetThreadContext();
  absl::Status status = CheckVendor(vendor.aclrtSetDevice(device), "aclrtSetDevice");
  if (!status.ok()) return status;
  aclrtContext context = nullptr;
  status = CheckVendor(vendor.aclrtCreateContext(&context, device), "aclrtCreateContext");
  if (!status.ok()) {
    vendor.aclrtResetDevice(device);
    return status;
  }
  std::shared_ptr<DeviceContext> created(new DeviceContext(std::move(api), device, context));
  // aclrtCreateContext made the new context current on this thread.
  thread_context_id = created->id_;
  return created;
}

absl::Status DeviceContext::MakeCurrent() const {
  if (!alive()) {
    return BackendError(ACL_ERROR_RT_CONTEXT_NULL,
                        absl::StrCat("device ", device_, " is not brought up"));
  }
  if (thread_context_id == id_) return absl::OkStatus();
  absl::Status status =
      CheckVendor(api_->aclrtSetCurrentContext(context_), "aclrtSetCurrentContext");
  if (status.ok()) thread_context_id = id_;
  return status;
}

DeviceContext::~DeviceContext() { Destroy(); }

void DeviceContext::Destroy() {
  if (!alive_.exchange(false, std::memory_order_acq_rel)) return;
  // Errors are of no use here: the device is being reset either way.
  api_->aclrtDestroyContext(context_);
  api_->aclrtResetDevice(device_);
  ForgetThreadContext();
  std::vector<std::shared_ptr<void>> released;  // the reset ended what used them
  absl::MutexLock lock(&held_mu_);
  released.swap(held_);
}

void DeviceContext::HoldUntilDestroyed(std::shared_ptr<void> held) {
  {
    absl::MutexLock lock(&held_mu_);
    // Checked under the lock Destroy takes after it cleared alive_.
    if (alive()) {
      held_.push_back(std::move(held));
      return;
    }
  }
  held.reset();  // outside the lock: it may hold this context's last holder
}

size_t DeviceContext::held_count() const {
  absl::MutexLock lock(&held_mu_);
  return held_.size();
}

void DeviceContext::ForgetThreadContext() { thread_context_id = 0; }

}  // namespace hal::acl
