// A consistent, copyable picture of the runtime for operators (aclctl).
#ifndef ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_
#define ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_

#include <cstdint>
#include <vector>

#include "daemon/core/session.h"
#include "hal/device.h"

namespace acld {

struct SessionSnapshot {
  Session session;
  uint64_t init_count = 0;
};

struct DeviceSnapshot {
  hal::DeviceInfo info;
  bool up = false;
  uint32_t sessions = 0;  // sessions holding a device reference on it
};

struct RuntimeSnapshot {
  uint64_t host_refcount = 0;
  std::vector<DeviceSnapshot> devices;
  std::vector<SessionSnapshot> sessions;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_
