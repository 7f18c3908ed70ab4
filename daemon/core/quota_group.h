// A quota group (docs/groups.md): devices and limits that hold for all of its
// sessions together.
//
// Per-process limits let a container with several processes take more than
// its share, and per-uid caps let one container lock out the others (in pods
// everyone is uid 0). A group's sessions are every process that connected
// through the group's own sockets; the group sees only its devices, numbered
// from 0, and its memory limit holds per device across all of them.
#ifndef ACLD_DAEMON_CORE_QUOTA_GROUP_H_
#define ACLD_DAEMON_CORE_QUOTA_GROUP_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/device_view.h"

namespace acld {

struct QuotaGroupSpec {
  // Host device ids, each once; the group's device i is devices[i].
  std::vector<int32_t> devices;
  // Bytes all sessions together may hold on devices[i]; 0: no limit.
  std::vector<uint64_t> memory_limits;
  uint32_t max_streams = 0;   // streams of all its sessions together; 0: no limit
  uint32_t max_sessions = 0;  // sessions at once; 0: acld's per-uid cap applies to the group
};

// OK when `spec` names 1..host_devices distinct devices of the host and one
// memory limit per device; otherwise an error saying what is wrong.
absl::Status CheckQuotaGroupSpec(const QuotaGroupSpec& spec, int32_t host_devices);

// The public name of the group with `id` (QuotaGroup::name).
std::string QuotaGroupName(const std::string& id);

class QuotaGroup {
 public:
  // `spec` passed CheckQuotaGroupSpec.
  QuotaGroup(std::string id, QuotaGroupSpec spec);

  const std::string& id() const { return id_; }
  // What logs, metrics and error messages call it: the first 8 digits of its
  // id. The id itself is the key to the group's directory (docs/groups.md)
  // and stays with the operator.
  const std::string& name() const { return name_; }
  const QuotaGroupSpec& spec() const { return spec_; }
  const DeviceView& view() const { return view_; }

  // Charges `bytes` (what the device reserves for `asked`) on host device
  // `device` unless that passes the group's limit there (then
  // ACL_ERROR_RT_MEMORY_ALLOCATION naming the group's quota, for `api`).
  absl::Status ChargeMemory(int32_t device, uint64_t bytes, uint64_t asked, const char* api);
  void UnchargeMemory(int32_t device, uint64_t bytes);
  uint64_t MemoryUsed(int32_t device) const;
  // Its limit on host device `device` (0: none, or not its device).
  uint64_t MemoryLimit(int32_t device) const;

  // The group was deleted: no session joins it any more.
  void Retire() { retired_.store(true); }
  bool retired() const { return retired_.load(); }

 private:
  const std::string id_;
  const std::string name_;
  const QuotaGroupSpec spec_;
  const DeviceView view_;
  std::atomic<bool> retired_{false};
  mutable absl::Mutex mu_;
  std::map<int32_t, uint64_t> memory_used_ ABSL_GUARDED_BY(mu_);  // by host device
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_QUOTA_GROUP_H_
