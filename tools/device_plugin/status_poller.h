// Asks acld for its devices at a bounded rate (GetStatus every interval) and
// keeps the last answer for ListAndWatch and Allocate. acld unreachable makes
// every known device unhealthy; the devices stay listed.
#ifndef ACLD_TOOLS_DEVICE_PLUGIN_STATUS_POLLER_H_
#define ACLD_TOOLS_DEVICE_PLUGIN_STATUS_POLLER_H_

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/acl/v1/admin.pb.h"
#include "tools/device_plugin/admin_client.h"
#include "tools/device_plugin/inventory.h"

namespace acld::device_plugin {

// Folds one GetStatus answer into `snapshot`: devices with ids out of range
// or listed twice are ignored; devices acld no longer lists are dropped.
// A failed call (nullptr) keeps the devices and marks acld unreachable.
void ApplyStatus(const acl::v1::StatusReply* reply, DeviceSnapshot* snapshot);

class StatusPoller {
 public:
  StatusPoller(AdminClient& admin, absl::Duration interval);
  ~StatusPoller();  // stops the thread
  StatusPoller(const StatusPoller&) = delete;
  StatusPoller& operator=(const StatusPoller&) = delete;

  void Start();

  struct Versioned {
    DeviceSnapshot snapshot;
    uint64_t version = 0;  // grows by one with every change
  };
  Versioned Current() const;
  // Returns once the version differs from `seen` or `timeout` passes.
  Versioned WaitForChange(uint64_t seen, absl::Duration timeout) const;
  // Polls now (outside the interval) and returns the result: Allocate asks it
  // when a unit is not known yet.
  Versioned Refresh();

 private:
  void Run();
  void PollOnce();

  AdminClient& admin_;
  const absl::Duration interval_;
  absl::Mutex poll_mu_;  // one GetStatus at a time
  mutable absl::Mutex mu_;
  DeviceSnapshot snapshot_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace acld::device_plugin

#endif  // ACLD_TOOLS_DEVICE_PLUGIN_STATUS_POLLER_H_
