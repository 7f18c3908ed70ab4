// A consistent, copyable picture of the runtime for operators (aclctl).
#ifndef ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_
#define ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/core/latency_histogram.h"
#include "daemon/core/physical_memory.h"
#include "daemon/core/session.h"
#include "daemon/core/task_tally.h"
#include "daemon/core/tenant.h"
#include "hal/device.h"

namespace acld {

// What operators see of a session: who it is, what it set, and how many of
// each kind of handle it holds. Counts, not copies: a snapshot is taken under
// the runtime's lock (the device plugin asks every second), and copying a
// session's tens of thousands of handles there held every other session's
// calls back, for as long as a tenant with full maps liked.
struct SessionSummary {
  SessionId id = 0;
  PeerInfo peer;
  absl::Time connected_since;
  std::shared_ptr<QuotaGroup> group;
  std::map<int32_t, uint32_t> device_refs;
  std::map<std::string, std::string> config;  // bounded (ShownInitSettings)
  uint32_t max_streams = 0;
  uint32_t max_contexts = 0;
  uint32_t max_events = 0;
  uint32_t weight = 1;
  size_t streams = 0;
  size_t closing_streams = 0;
  size_t contexts = 0;  // created ones: default contexts excluded
  size_t events = 0;    // notifies included
  size_t binaries = 0;
};

struct SessionSnapshot {
  SessionSummary session;
  uint64_t init_count = 0;
  uint64_t memory_bytes = 0;
  uint64_t memory_quota = 0;       // 0: none
  uint64_t memory_allocations = 0;
  uint64_t max_memory_allocations = 0;  // 0: none
  uint64_t pending_callbacks = 0;  // delivered, not yet finished by the process
  uint64_t callback_timeouts = 0;
  uint64_t queued_bytes = 0;        // work queued on its streams, as charged
  uint64_t queued_bytes_limit = 0;  // 0: none
  // Kernel binaries it holds (binary_charges.h), unloaded ones with launches
  // still queued included.
  uint64_t binary_bytes = 0;
  uint64_t binary_bytes_limit = 0;  // 0: none
  PhysicalMemory::Usage physical;   // physical memory handles, reservations, mappings
  // Shared ranges revoked from it that it still reaches, until its process
  // saw the notice (MemoryManager, "Revocation notices").
  uint64_t noticed_revocations = 0;
};

struct DeviceSnapshot {
  hal::DeviceInfo info;
  bool up = false;
  uint32_t sessions = 0;  // sessions holding a device reference on it
  uint64_t used_bytes = 0;
  hal::DeviceUtilization utilization;
  bool disabled = false;  // by the operator (aclctl device disable)
  TaskTally::Counts tasks;  // how its tasks ended since acld started
  // How many of its streams, events and notifies each tenant may hold
  // (--device_share_per_uid of info.objects; 0: no share to check).
  hal::DeviceObjectLimits tenant_share;
};

struct StreamSnapshot {
  StreamId id = 0;
  SessionId session = 0;
  int32_t device = 0;
  uint32_t priority = 0;
  bool custom_allocator = false;
  StreamStats stats;
};

// What all sessions of one tenant (tenant.h) hold together, against the
// limits per uid.
struct TenantSnapshot {
  Tenant tenant;
  uint32_t sessions = 0;
  // Device memory allocations (pinned frees of ended sessions included).
  uint64_t memory_allocations = 0;
  uint64_t binary_bytes = 0;
  uint64_t queued_bytes = 0;  // work queued on its sessions' streams, as charged
  // Handles, as the per-uid limits count them.
  uint64_t streams = 0;   // closing ones included
  uint64_t contexts = 0;  // default contexts excluded
  uint64_t events = 0;    // notifies included
  // Its streams (closing ones included) and its own events on each device
  // where it holds any, as --device_share_per_uid counts them.
  std::map<int32_t, uint64_t> streams_on_device;
  std::map<int32_t, uint64_t> events_on_device;
  // The device's notifies the backend took for its streams (acl).
  std::map<int32_t, uint64_t> notifies_on_device;
};

struct RuntimeSnapshot {
  std::string backend;  // the backend's name
  uint64_t host_refcount = 0;
  std::vector<DeviceSnapshot> devices;
  std::vector<SessionSnapshot> sessions;
  // Every tenant with a session or with allocations; the limits (0: none).
  std::vector<TenantSnapshot> tenants;
  uint64_t max_allocations_per_tenant = 0;
  uint64_t max_binary_bytes_per_tenant = 0;
  uint64_t max_queued_bytes_per_tenant = 0;
  uint32_t max_streams_per_tenant = 0;
  uint32_t max_contexts_per_tenant = 0;
  uint32_t max_events_per_tenant = 0;
  // --device_share_per_uid: percent of each device's streams and events.
  uint32_t device_share_per_tenant = 0;
  // Blocking host callbacks, from delivery to the process's answer.
  LatencyHistogram::Snapshot callback_latency;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RUNTIME_SNAPSHOT_H_
