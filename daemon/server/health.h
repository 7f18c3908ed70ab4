// Whether acld serves, defined once: every socket accepts connections and the
// backend can drive its devices. systemd's readiness and watchdog use it
// (service_notifier.h); each device's health adds the operator's word.
#ifndef ACLD_DAEMON_SERVER_HEALTH_H_
#define ACLD_DAEMON_SERVER_HEALTH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "daemon/core/runtime.h"

namespace acld::server {

// OK, or Unavailable naming the first thing that is not: a socket of
// `sockets` that accepts no connection, or the backend's own reason.
absl::Status CheckHealth(const std::vector<std::string>& sockets, const Runtime& runtime);

// One device's health, as `aclctl devices`, the metrics and the device
// plugin's ListAndWatch report it: acld serves (`serving`, CheckHealth's
// answer) and the operator has not taken the device out.
absl::Status DeviceHealth(const absl::Status& serving, int32_t device, bool disabled);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_HEALTH_H_
