#include "hal/acl/args_ring.h"

#include "hal/acl/vendor_status.h"

namespace hal::acl {
namespace {

constexpr uint64_t kSliceAlignment = 64;

}  // namespace

absl::StatusOr<std::shared_ptr<ArgsRing>> ArgsRing::Create(
    std::shared_ptr<DeviceContext> context, uint64_t capacity,
    const StreamOptions::MemoryCharger& charge) {
  std::shared_ptr<void> charged;
  if (charge) {
    absl::StatusOr<std::shared_ptr<void>> taken = charge(capacity);
    if (!taken.ok()) return taken.status();
    charged = *std::move(taken);
  }
  absl::Status status = context->MakeCurrent();
  if (!status.ok()) return status;
  const VendorApi& api = context->api();
  void* device = nullptr;
  status = CheckVendor(api.aclrtMalloc(&device, capacity, ACL_MEM_MALLOC_HUGE_FIRST),
                       "aclrtMalloc (kernel arguments)");
  if (!status.ok()) return status;
  void* host = nullptr;
  status = CheckVendor(api.aclrtMallocHost(&host, capacity), "aclrtMallocHost");
  if (!status.ok()) {
    api.aclrtFree(device);
    return status;
  }
  return std::shared_ptr<ArgsRing>(
      new ArgsRing(std::move(context), capacity, host, device, std::move(charged)));
}

ArgsRing::~ArgsRing() {
  if (!context_->MakeCurrent().ok()) return;
  context_->api().aclrtFree(device_);
  context_->api().aclrtFreeHost(host_);
}

bool ArgsRing::idle() const {
  absl::MutexLock lock(&mu_);
  return taken_ == given_;
}

std::optional<ArgsRing::Slice> ArgsRing::Take(uint64_t bytes) {
  bytes = (bytes + kSliceAlignment - 1) / kSliceAlignment * kSliceAlignment;
  if (bytes == 0) bytes = kSliceAlignment;
  if (bytes > capacity_) return std::nullopt;
  absl::MutexLock lock(&mu_);
  const uint64_t position = taken_ % capacity_;
  // A slice never wraps: it skips the ring's tail and starts over.
  const uint64_t skipped = position + bytes > capacity_ ? capacity_ - position : 0;
  const uint64_t charge = skipped + bytes;
  if (taken_ - given_ + charge > capacity_) return std::nullopt;
  taken_ += charge;
  return Slice{skipped > 0 ? 0 : position, charge};
}

void ArgsRing::Give(const Slice& slice) {
  absl::MutexLock lock(&mu_);
  given_ += slice.charge;
}

void ArgsRing::Untake(const Slice& slice) {
  absl::MutexLock lock(&mu_);
  taken_ -= slice.charge;
}

}  // namespace hal::acl
