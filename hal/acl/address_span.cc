#include "hal/acl/address_span.h"

#include <algorithm>
#include <limits>

namespace hal::acl {
namespace {

// Coarse steps keep the number of snapshots small.
constexpr uint64_t kStep = uint64_t{64} << 20;

uint64_t StepDown(uint64_t address) { return address / kStep * kStep; }

uint64_t StepUp(uint64_t address) {
  if (address > std::numeric_limits<uint64_t>::max() - kStep) {
    return std::numeric_limits<uint64_t>::max();
  }
  return (address + kStep - 1) / kStep * kStep;
}

}  // namespace

AddressSpan::AddressSpan(DeviceInfo info) {
  info.addresses = AddressRange{};
  snapshots_.push_back(std::make_unique<const DeviceInfo>(std::move(info)));
  current_.store(snapshots_.back().get(), std::memory_order_release);
}

void AddressSpan::Cover(uint64_t begin, uint64_t end) {
  const AddressRange& now = info().addresses;
  if (now.begin < now.end && begin >= now.begin && end <= now.end) return;
  absl::MutexLock lock(&mu_);
  const DeviceInfo& latest = *snapshots_.back();
  AddressRange range = latest.addresses;
  if (range.begin == range.end) {
    range = AddressRange{StepDown(begin), StepUp(end)};
  } else {
    range.begin = std::min(range.begin, StepDown(begin));
    range.end = std::max(range.end, StepUp(end));
  }
  // Address 0 is never device memory (and would make a null pointer one).
  if (range.begin == 0) range.begin = 1;
  if (range.begin == latest.addresses.begin && range.end == latest.addresses.end) return;
  auto widened = std::make_unique<DeviceInfo>(latest);
  widened->addresses = range;
  snapshots_.push_back(std::move(widened));
  current_.store(snapshots_.back().get(), std::memory_order_release);
}

}  // namespace hal::acl
