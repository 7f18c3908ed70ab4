// The streams and events each tenant holds on each device, against the
// tenant's share of the device's own number (--device_share_per_uid).
//
// A device has a fixed number of streams and events for all its users
// (hal::DeviceObjectLimits) and refuses the one past it whoever asks, so one
// user who took them all would leave every other user none. A tenant (a uid,
// or a quota group: tenant.h) may hold a share of each.
//
// What counts is the core object, which holds the device's own for its life:
// a stream until its work drained (after a destroy, or after its session
// ended), an event until the last task that records or waits on it let go.
// Counting the sessions' handles instead let a user destroy events whose
// records were queued behind a held stream, or reconnect while its old
// streams drained, and hold device objects no one was charged for.
#ifndef ACLD_DAEMON_CORE_DEVICE_OBJECT_LEDGER_H_
#define ACLD_DAEMON_CORE_DEVICE_OBJECT_LEDGER_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/core/tenant.h"
#include "hal/device.h"

namespace acld {

class DeviceObjectLedger {
 public:
  // Notifies are those the backend takes for work that waits on the host
  // (hal::StreamOptions::charge_notify), in flight or kept for reuse.
  enum Kind { kStream = 0, kEvent = 1, kNotify = 2 };
  using Counts = std::array<uint64_t, 3>;  // by Kind

  // `devices`: each device's numbers, by device id. `percent`: each
  // tenant's share of them (0 or 100 and above: no share, only the
  // device's own number).
  DeviceObjectLedger(std::vector<hal::DeviceObjectLimits> devices, uint32_t percent);

  uint32_t percent() const { return percent_; }  // as configured
  // What one tenant may hold of `kind` on `device` (0: no share to check).
  uint32_t Share(int32_t device, Kind kind) const;
  // The device's own number (0: none).
  uint32_t DeviceNumber(int32_t device, Kind kind) const;

  // One more `kind` on `device` for `tenant`: a charge that its object holds
  // for its life and that gives itself back when its last copy goes (on
  // any thread); or, past the tenant's share, ACL_ERROR_RT_NO_STREAM_RESOURCE,
  // _EVENT_ or _NOTIFY_ with a message for `call` naming the flag.
  absl::StatusOr<std::shared_ptr<void>> Charge(const Tenant& tenant, int32_t device, Kind kind,
                                               absl::string_view call);

  uint64_t Held(const Tenant& tenant, int32_t device, Kind kind) const;
  // By all tenants together.
  uint64_t HeldOnDevice(int32_t device, Kind kind) const;
  // Every tenant's counts on each device where it holds any.
  std::map<Tenant, std::map<int32_t, Counts>> All() const;

 private:
  struct State;

  const std::vector<hal::DeviceObjectLimits> devices_;
  const uint32_t percent_;
  // Shared with the charges, which may outlive the ledger.
  const std::shared_ptr<State> state_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_DEVICE_OBJECT_LEDGER_H_
