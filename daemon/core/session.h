// What the daemon knows about one client process's session and what it holds.
#ifndef ACLD_DAEMON_CORE_SESSION_H_
#define ACLD_DAEMON_CORE_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "daemon/core/binary_charges.h"
#include "daemon/core/event.h"
#include "daemon/core/notify.h"
#include "daemon/core/queue_budget.h"
#include "daemon/core/quota_group.h"
#include "daemon/core/session_events.h"
#include "daemon/core/session_id.h"
#include "daemon/core/stream.h"
#include "daemon/core/tenant.h"
#include "hal/executable.h"
#include "hal/float_overflow.h"

namespace acld {

using ContextId = uint64_t;

// Who is on the other end of a session.
struct PeerInfo {
  int32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string command;
  // When the process started (daemon/core/process_clock.h); 0 if unknown.
  uint64_t start_ticks = 0;
  // For a subordinate uid, the user who owns its range, as read when the
  // process connected (docs/security.md): whom its per-uid limits charge.
  std::optional<uint32_t> range_owner;
  uint32_t counted_uid() const { return range_owner.value_or(uid); }
};

struct Context {
  ContextId id = 0;
  int32_t device = 0;
  StreamId default_stream = 0;
  bool is_device_default = false;  // the device's default context of the session
};

using BinaryId = uint64_t;
using FunctionId = uint64_t;

// A kernel binary the session loaded (aclrtBinaryLoadFromData/File).
struct LoadedBinary {
  int32_t device = 0;
  // Holds the binary's charge (binary_charges.h) as long as it, or a copy
  // (a function handle, a queued launch), lives.
  std::shared_ptr<hal::Executable> executable;
  // The charge `executable` holds: its size, its tables, its function handles.
  BinaryCharges::Held* charge = nullptr;
  std::map<std::string, FunctionId> functions;  // handed out by aclrtBinaryGetFunction
};

// A function handle: valid while its binary is loaded.
struct LoadedFunction {
  BinaryId binary = 0;
  int32_t device = 0;
  const hal::Function* function = nullptr;
  std::shared_ptr<hal::Executable> executable;  // keeps `function` alive
};

struct Session {
  SessionId id = 0;
  PeerInfo peer;
  absl::Time connected_since;
  // The quota group it connected through (none: the host's runtime socket).
  std::shared_ptr<QuotaGroup> group;
  // aclrtSetDevice references per device id (aclrtResetDevice drops one).
  std::map<int32_t, uint32_t> device_refs;
  // The aclInit settings of the current initialization, for operators
  // (ShownInitSettings: bounded).
  std::map<std::string, std::string> config;
  bool has_default_device = false;
  int32_t default_device = 0;

  // Handles: valid only inside this session.
  std::map<ContextId, Context> contexts;
  std::map<int32_t, ContextId> default_contexts;  // per device
  std::map<StreamId, std::shared_ptr<Stream>> streams;
  // Its places on each device's queue, shared by its streams there.
  std::map<int32_t, std::shared_ptr<DeviceShare>> device_shares;
  std::map<EventId, std::shared_ptr<Event>> events;
  std::map<NotifyId, std::shared_ptr<Notify>> notifies;  // share the events quota
  // Entries its shared notifies' whitelists hold (kernel_whitelist.h's bound).
  size_t notify_whitelist_entries = 0;
  std::map<BinaryId, LoadedBinary> binaries;
  std::map<FunctionId, LoadedFunction> functions;
  std::set<StreamId> streams_with_allocator;    // carry a custom allocator (SPEC section 7)
  std::shared_ptr<const SessionEvents> notify;  // where its process hears of callbacks, failures
  uint32_t max_streams = 0;                     // quota; 0: no limit
  uint32_t max_contexts = 0;                    // quota; 0: no limit
  uint32_t max_events = 0;                      // quota (events and notifies); 0: no limit
  uint32_t weight = 1;                          // share of each device's time
  // Streams given up (destroyed, reset) whose launched work still runs: they
  // count against the stream quota until drained, and a reset of their
  // device (or the end of the session) waits for them too.
  std::map<StreamId, std::shared_ptr<Stream>> closing_streams;
  std::shared_ptr<QueueBudget> queue_budget;
  // Its float overflow status per device (aclrtGetOverflowStatus): CANN's is
  // the process's.
  std::map<int32_t, std::shared_ptr<hal::OverflowStatus>> overflow_status;
  // Handles of other sessions' IPC events and notifies whose owner destroyed
  // them or ended: gone, but destroying them still succeeds, as CANN's
  // cleanup order expects (at most kMaxRevokedHandles kept).
  std::set<uint64_t> revoked_handles;
  static constexpr size_t kMaxRevokedHandles = 4096;
};

// Whose per-uid limits the session counts against.
inline Tenant TenantOf(const Session& session) {
  return Tenant(session.peer.counted_uid(), session.group);
}

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_H_
