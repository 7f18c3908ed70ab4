// One device's vendor context, shared by every thread of the backend.
//
// A CANN runtime executes a call in the calling thread's current context and
// refuses (or misroutes) calls from a thread that has none, so every entry
// point that calls the vendor first calls MakeCurrent(). Each thread
// remembers which context it last made current, so a thread that keeps
// working for one device pays for aclrtSetCurrentContext once.
//
// Objects that outlive a device's bring-up (buffers, events, executables,
// streams the core still holds) keep the context by shared_ptr; once the
// device is released MakeCurrent fails and they skip their vendor calls (the
// vendor already dropped what they held when the device was reset).
#ifndef ACLD_HAL_ACL_DEVICE_CONTEXT_H_
#define ACLD_HAL_ACL_DEVICE_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/vendor_api.h"

namespace hal::acl {

class DeviceContext {
 public:
  // aclrtSetDevice + aclrtCreateContext on the calling thread.
  static absl::StatusOr<std::shared_ptr<DeviceContext>> Create(std::shared_ptr<const VendorApi> api,
                                                               int32_t device);

  // Destroy(): the last holder (device, stream, event, buffer) resets the device.
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  const VendorApi& api() const { return *api_; }
  const std::shared_ptr<const VendorApi>& shared_api() const { return api_; }
  int32_t device() const { return device_; }
  bool alive() const { return alive_.load(std::memory_order_acquire); }

  // Makes this context the calling thread's current one (no vendor call when
  // it already is). Fails once the context is destroyed.
  absl::Status MakeCurrent() const;

  // aclrtDestroyContext + aclrtResetDevice. Idempotent.
  void Destroy();

  // Keeps `held` until Destroy (at once let go of when destroyed already):
  // what a stream's device work may still use after the vendor could not be
  // reached to discard or wait for it (AclStream's abort). Only the device's
  // reset ends that work. Held things that keep this context make a cycle
  // that Destroy breaks (the backend's end): they are kept until then.
  void HoldUntilDestroyed(std::shared_ptr<void> held);
  size_t held_count() const;

  // For vendor calls that change the calling thread's context behind our back
  // (aclrtSetDevice, aclrtResetDevice, aclrtCreateContext): the next
  // MakeCurrent on this thread sets the context again.
  static void ForgetThreadContext();

 private:
  DeviceContext(std::shared_ptr<const VendorApi> api, int32_t device, aclrtContext context);

  const std::shared_ptr<const VendorApi> api_;
  const int32_t device_;
  const aclrtContext context_;
  // Never reused, unlike a vendor handle: what a thread remembers.
  const uint64_t id_;
  std::atomic<bool> alive_{true};
  mutable absl::Mutex held_mu_;
  std::vector<std::shared_ptr<void>> held_ ABSL_GUARDED_BY(held_mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_DEVICE_CONTEXT_H_
