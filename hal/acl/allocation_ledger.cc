#include "hal/acl/allocation_ledger.h"

#include <limits>

namespace hal::acl {
namespace {

constexpr uint64_t kSizeGranule = 32;  // aclrtMalloc rounds the size to this
constexpr uint64_t kPadding = 32;      // and adds this
constexpr uint64_t kStartAlignment = 64;

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

std::optional<uint64_t> AllocationLedger::ReservedBytes(uint64_t size) const {
  // Checked before rounding, so that no size wraps around to a small one.
  constexpr uint64_t kLargestRoundable =
      std::numeric_limits<uint64_t>::max() - kSizeGranule - kPadding - kStartAlignment;
  if (size == 0 || size > kLargestRoundable || size > capacity_) return std::nullopt;
  const uint64_t reserved = AlignUp(AlignUp(size, kSizeGranule) + kPadding, kStartAlignment);
  if (reserved > capacity_) return std::nullopt;
  return reserved;
}

bool AllocationLedger::TryReserve(uint64_t reserved) {
  absl::MutexLock lock(&mu_);
  if (reserved > capacity_ - used_) return false;
  used_ += reserved;
  return true;
}

void AllocationLedger::Unreserve(uint64_t reserved) {
  absl::MutexLock lock(&mu_);
  used_ -= reserved < used_ ? reserved : used_;
}

void AllocationLedger::AddLive(uint64_t address, uint64_t reserved) {
  absl::MutexLock lock(&mu_);
  live_[address] = reserved;
}

std::optional<uint64_t> AllocationLedger::RemoveLive(uint64_t address) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(address);
  if (it == live_.end()) return std::nullopt;
  const uint64_t reserved = it->second;
  live_.erase(it);
  return reserved;
}

bool AllocationLedger::IsLive(uint64_t address) const {
  absl::MutexLock lock(&mu_);
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return false;
  --it;
  return address - it->first < it->second;
}

uint64_t AllocationLedger::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace hal::acl
