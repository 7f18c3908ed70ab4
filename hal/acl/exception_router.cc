#include "hal/acl/exception_router.h"

#include <array>
#include <utility>

#include "hal/acl/vendor_status.h"

namespace hal::acl {
namespace {

// Backends alive at once with a vendor library each (a daemon has one; tests
// load a few fakes).
constexpr int kSlots = 8;

struct Slot {
  absl::Mutex mu;
  ExceptionRouter* router ABSL_GUARDED_BY(mu) = nullptr;
};

std::array<Slot, kSlots>& Slots() {
  static auto* slots = new std::array<Slot, kSlots>();
  return *slots;
}

template <int kSlot>
void Trampoline(aclrtExceptionInfo* info) {
  Slot& slot = Slots()[kSlot];
  absl::MutexLock lock(&slot.mu);
  if (slot.router != nullptr) slot.router->Route(info);
}

template <int... kIndex>
constexpr std::array<aclrtExceptionInfoCallback, kSlots> MakeTrampolines(
    std::integer_sequence<int, kIndex...>) {
  return {&Trampoline<kIndex>...};
}

constexpr std::array<aclrtExceptionInfoCallback, kSlots> kTrampolines =
    MakeTrampolines(std::make_integer_sequence<int, kSlots>());

}  // namespace

absl::StatusOr<std::shared_ptr<ExceptionRouter>> ExceptionRouter::Install(
    std::shared_ptr<const VendorApi> api) {
  for (int index = 0; index < kSlots; ++index) {
    Slot& slot = Slots()[index];
    std::shared_ptr<ExceptionRouter> router;
    {
      absl::MutexLock lock(&slot.mu);
      if (slot.router != nullptr) continue;
      router.reset(new ExceptionRouter(api, index));
      slot.router = router.get();
    }
    const aclrtExceptionInfoCallback callback = kTrampolines[index];
    const absl::Status status = api->aclrtExceptionInfoCallbackRegister != nullptr
                                    ? CheckVendor(api->aclrtExceptionInfoCallbackRegister(callback),
                                                  "aclrtExceptionInfoCallbackRegister")
                                    : CheckVendor(api->aclrtSetExceptionInfoCallback(callback),
                                                  "aclrtSetExceptionInfoCallback");
    if (!status.ok()) {
      absl::MutexLock lock(&slot.mu);
      slot.router = nullptr;
      return status;
    }
    return router;
  }
  return BackendError(ACL_ERROR_RT_OVER_LIMIT,
                      "too many acl backends alive in this process for their exception callbacks");
}

ExceptionRouter::ExceptionRouter(std::shared_ptr<const VendorApi> api, int slot)
    : api_(std::move(api)), slot_(slot) {}

ExceptionRouter::~ExceptionRouter() {
  if (api_->aclrtExceptionInfoCallbackUnregister != nullptr) {
    api_->aclrtExceptionInfoCallbackUnregister(kTrampolines[slot_]);
  } else {
    api_->aclrtSetExceptionInfoCallback(nullptr);
  }
  Slot& slot = Slots()[slot_];
  absl::MutexLock lock(&slot.mu);
  slot.router = nullptr;
}

void ExceptionRouter::Add(int32_t device, int32_t stream_id, std::weak_ptr<FailureSink> sink) {
  absl::MutexLock lock(&mu_);
  sinks_[{device, stream_id}] = std::move(sink);
}

void ExceptionRouter::Remove(int32_t device, int32_t stream_id) {
  absl::MutexLock lock(&mu_);
  sinks_.erase({device, stream_id});
}

void ExceptionRouter::Route(const aclrtExceptionInfo* info) {
  if (info == nullptr) return;
  const auto device = static_cast<int32_t>(api_->aclrtGetDeviceIdFromExceptionInfo(info));
  const auto stream_id = static_cast<int32_t>(api_->aclrtGetStreamIdFromExceptionInfo(info));
  const uint32_t task_id = api_->aclrtGetTaskIdFromExceptionInfo(info);
  auto code = static_cast<int32_t>(api_->aclrtGetErrorCodeFromExceptionInfo(info));
  // A failure without a code is still a failure.
  if (code == ACL_SUCCESS) code = ACL_ERROR_RT_INTERNAL_ERROR;
  std::shared_ptr<FailureSink> sink;
  {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find({device, stream_id});
    if (it != sinks_.end()) sink = it->second.lock();
  }
  if (sink != nullptr) sink->OnTaskFailure(task_id, code);
}

}  // namespace hal::acl
