// Task failures the vendor reports, routed to the stream that ran the task.
//
// A CANN runtime reports a failed task (a kernel's AI Core exception, a DMA
// error) only through its process-wide exception callback, with the device,
// stream id, task id and ACL code of the failure; synchronizing the stream
// later returns the code again but cannot say which task failed. The stream's
// items are told apart by task id (aclrtGetThreadLastTaskId after each
// submission), so the router hands each failure to its stream, which reports
// it with the failing item.
//
// The vendor callback carries no user data, so each router owns one of a few
// static trampolines: one per loaded vendor library (each library's
// exception info must be read through that library's own getters).
#ifndef ACLD_HAL_ACL_EXCEPTION_ROUTER_H_
#define ACLD_HAL_ACL_EXCEPTION_ROUTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/vendor_api.h"

namespace hal::acl {

// What a stream does with a failure of one of its tasks.
class FailureSink {
 public:
  virtual ~FailureSink() = default;
  // Called on a vendor thread: must not call the vendor.
  virtual void OnTaskFailure(uint32_t task_id, int32_t acl_code) = 0;
};

class ExceptionRouter {
 public:
  // Registers a trampoline as the vendor's exception callback
  // (aclrtExceptionInfoCallbackRegister when the vendor has it, else
  // aclrtSetExceptionInfoCallback).
  static absl::StatusOr<std::shared_ptr<ExceptionRouter>> Install(
      std::shared_ptr<const VendorApi> api);
  // Unregisters it; no callback reaches the router afterwards.
  ~ExceptionRouter();

  void Add(int32_t device, int32_t stream_id, std::weak_ptr<FailureSink> sink);
  void Remove(int32_t device, int32_t stream_id);

  // For the trampolines.
  void Route(const aclrtExceptionInfo* info);

 private:
  ExceptionRouter(std::shared_ptr<const VendorApi> api, int slot);

  const std::shared_ptr<const VendorApi> api_;
  const int slot_;
  absl::Mutex mu_;
  std::map<std::pair<int32_t, int32_t>, std::weak_ptr<FailureSink>> sinks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_EXCEPTION_ROUTER_H_
