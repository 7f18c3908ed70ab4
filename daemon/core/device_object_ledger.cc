#include "daemon/core/device_object_ledger.h"

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

struct DeviceObjectLedger::State {
  absl::Mutex mu;  // a leaf: nothing is called while it is held
  std::map<std::pair<Tenant, int32_t>, Counts> held ABSL_GUARDED_BY(mu);
  std::map<int32_t, Counts> by_device ABSL_GUARDED_BY(mu);
};

DeviceObjectLedger::DeviceObjectLedger(std::vector<hal::DeviceObjectLimits> devices,
                                       uint32_t percent)
    : devices_(std::move(devices)),
      percent_(percent),
      state_(std::make_shared<State>()) {}

uint32_t DeviceObjectLedger::DeviceNumber(int32_t device, Kind kind) const {
  if (device < 0 || static_cast<size_t>(device) >= devices_.size()) return 0;
  const hal::DeviceObjectLimits& limits = devices_[device];
  switch (kind) {
    case kStream:
      return limits.streams;
    case kEvent:
      return limits.events;
    case kNotify:
      return limits.notifies;
  }
  return 0;
}

uint32_t DeviceObjectLedger::Share(int32_t device, Kind kind) const {
  const uint32_t number = DeviceNumber(device, kind);
  if (number == 0 || percent_ == 0 || percent_ >= 100) return 0;
  // At least one: a device with few of them still serves every tenant.
  return std::max<uint32_t>(1, static_cast<uint32_t>(uint64_t{number} * percent_ / 100));
}

absl::StatusOr<std::shared_ptr<void>> DeviceObjectLedger::Charge(const Tenant& tenant,
                                                                 int32_t device, Kind kind,
                                                                 absl::string_view call) {
  const uint32_t share = Share(device, kind);
  const std::pair<Tenant, int32_t> key{tenant, device};
  {
    absl::MutexLock lock(&state_->mu);
    uint64_t& held = state_->held[key][kind];
    if (share != 0 && held >= share) {
      static constexpr const char* kWhat[] = {"streams", "events", "notifies"};
      static constexpr int32_t kCode[] = {ACL_ERROR_RT_NO_STREAM_RESOURCE,
                                          ACL_ERROR_RT_NO_EVENT_RESOURCE,
                                          ACL_ERROR_RT_NO_NOTIFY_RESOURCE};
      const char* what = kWhat[kind];
      // The device is the caller's current one: no id, which a quota
      // group's process would know by another number.
      return AclStatus(
          kCode[kind],
          absl::StrCat(call, ": the processes of ", tenant.ToString(), " may hold at most ",
                       share, " of this device's ", DeviceNumber(device, kind), " ", what,
                       " together (--device_share_per_uid=", percent_, "%); they hold ",
                       held));
    }
    ++held;
    ++state_->by_device[device][kind];
  }
  // Not null, so that a charge tells itself from nothing.
  return std::shared_ptr<void>(state_.get(), [state = state_, key, kind](void*) {
    absl::MutexLock lock(&state->mu);
    auto it = state->held.find(key);
    if (it != state->held.end() && --it->second[kind] == 0 && it->second == Counts{}) {
      state->held.erase(it);
    }
    --state->by_device[key.second][kind];
  });
}

uint64_t DeviceObjectLedger::Held(const Tenant& tenant, int32_t device, Kind kind) const {
  absl::MutexLock lock(&state_->mu);
  auto it = state_->held.find({tenant, device});
  return it == state_->held.end() ? 0 : it->second[kind];
}

uint64_t DeviceObjectLedger::HeldOnDevice(int32_t device, Kind kind) const {
  absl::MutexLock lock(&state_->mu);
  auto it = state_->by_device.find(device);
  return it == state_->by_device.end() ? 0 : it->second[kind];
}

std::map<Tenant, std::map<int32_t, DeviceObjectLedger::Counts>> DeviceObjectLedger::All() const {
  std::map<Tenant, std::map<int32_t, Counts>> all;
  absl::MutexLock lock(&state_->mu);
  for (const auto& [key, counts] : state_->held) all[key.first][key.second] = counts;
  return all;
}

}  // namespace acld
