// The runtime core: everything acld owns, with no transport in sight.
//
// Both the gRPC server (daemon/server) and the client library's embedded
// transport call this class; every method is keyed by the calling session and
// is thread-safe. Errors are absl::Status values carrying the exact aclError
// (see acl_status.h). Calls that wait (synchronizations, destroying a busy
// stream) take a completion callback instead of blocking the caller, so a
// session's other calls keep flowing meanwhile.
//
// The implementation is split by family: runtime.cc (sessions, init, devices,
// contexts), runtime_streams.cc (streams, events, tasks), runtime_memory.cc
// (memory and copies).
//
// The values it takes and returns that a client holds too (InitSettings,
// ContextInfo, MemsetRequest, launches, ...) are the contract's:
// proto/acl/transport_types.h.
#ifndef ACLD_DAEMON_CORE_RUNTIME_H_
#define ACLD_DAEMON_CORE_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/binary_charges.h"
#include "daemon/core/callback_broker.h"
#include "daemon/core/device_object_ledger.h"
#include "daemon/core/init_arbiter.h"
#include "daemon/core/kernel_launch.h"
#include "daemon/core/memory_exports.h"
#include "daemon/core/physical_memory.h"
#include "daemon/core/piecewise_transfer.h"
#include "daemon/core/memory_manager.h"
#include "daemon/core/process_clock.h"
#include "daemon/core/queue_budget.h"
#include "daemon/core/runtime_snapshot.h"
#include "daemon/core/session_events.h"
#include "daemon/core/session_table.h"
#include "daemon/core/stream_engine.h"
#include "hal/timer.h"
#include "hal/backend.h"
#include "proto/acl/transport_types.h"

namespace acld {

struct RuntimeOptions {
  int workers_per_device = 2;
  // How long a stream waits for its process to finish a blocking callback.
  absl::Duration callback_timeout = absl::Seconds(60);
  // Kernel binaries each session, and all sessions of a tenant together
  // (tenant.h), may hold loaded, in bytes (0: no limit).
  uint64_t max_binary_bytes_per_session = 256ull << 20;
  uint64_t max_binary_bytes_per_uid = 1ull << 30;
  // Quotas of new sessions (0: no limit); operators change them at run time.
  uint64_t default_memory_quota = 0;
  uint32_t default_max_streams = 4096;
  uint32_t default_max_contexts = 1024;
  uint32_t default_max_events = 16384;
  // The same for all sessions of a tenant together (0: no limit): per
  // session alone, one user's 256 sessions could make acld hold 3.7 GiB of
  // them (docs/security.md).
  uint32_t max_streams_per_uid = 16384;
  uint32_t max_contexts_per_uid = 4096;
  uint32_t max_events_per_uid = 65536;
  // The percent of a device's streams, and of its events, that all
  // sessions of a tenant may hold together, where the device has a fixed
  // number of them (device_object_ledger.h). 0 or 100: only the device's
  // own number, as in embedded mode, where one process is all there is
  // (acld's flag defaults to 25).
  uint32_t device_share_per_uid = 100;
  // Device memory allocations each session, and all sessions of a tenant
  // together, may hold (0: no limit).
  uint64_t max_allocations_per_session = 65536;
  uint64_t max_allocations_per_uid = 262144;
  // Queued work each session may make the daemon hold (0: no limit), and,
  // in acld (readers_await_queue_room), all sessions of a tenant together.
  uint64_t max_queued_bytes_per_session = 64ull << 20;
  uint64_t max_queued_bytes_per_uid = 256ull << 20;
  // How long a call over that limit waits for room before going on (QueueBudget).
  absl::Duration queue_patience = absl::Seconds(10);
  // acld: whoever reads a session's requests asks its budget (AwaitRoom) before
  // taking one, and no charge blocks a thread. Otherwise (embedded mode) a
  // charge over the limit waits for room on the caller's thread.
  bool readers_await_queue_room = false;
  // The clock of the core's timeouts (nullptr: the host's); tests pass a
  // hal::testing::FakeClock.
  hal::Clock* clock = nullptr;
};

// Host bytes a copy reads or writes, kept alive by `keepalive` until the copy
// ran (a pointer into the client's shared memory, a request's buffer, or, in
// embedded mode, the application's own memory).
struct HostSpan {
  uint8_t* data = nullptr;
  std::shared_ptr<void> keepalive;
  // Daemon memory the span itself holds (a request's inline bytes): charged
  // to the session's queue budget while the copy waits on its stream.
  uint64_t owned_bytes = 0;
  // Read as soon as a copy into it is done (a staging slot, a reply's
  // bytes): hal::Transfer::host_reads_next.
  bool read_next = false;
};

struct CopyRequest {
  using Direction = CopyDirection;
  Direction direction = Direction::kHostToDevice;
  uint64_t device_dst = 0;  // H2D, D2D
  uint64_t device_src = 0;  // D2H, D2D
  HostSpan host;            // the source (H2D) or destination (D2H)
  uint64_t count = 0;
};

// A copy whose ranges were checked, and whose device memory is pinned, when it
// was launched: running it later cannot touch memory freed meanwhile.
struct PreparedCopy {
  hal::Transfer transfer;
  int32_t device = 0;  // the device that runs it (the first device side's)
  std::shared_ptr<void> dst_keepalive;
  std::shared_ptr<void> src_keepalive;
};

using Done = std::function<void(absl::Status)>;
// Receives the bytes of a device-to-host copy into the client's own memory.
using Deliver = std::function<void(absl::StatusOr<std::string>)>;

class PinnedMemory;

class Runtime {
 public:
  Runtime(std::unique_ptr<hal::Backend> backend, const RuntimeOptions& options = {});
  ~Runtime();

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Sessions.
  SessionId OpenSession(const PeerInfo& peer, std::shared_ptr<QuotaGroup> group = nullptr);
  // What the operator sees as the session's command from now on (its
  // command line, read after the open); nothing if the session has ended.
  void SetSessionCommand(SessionId session, std::string command);
  // Where the session's process hears of its callbacks and failed tasks.
  void SetSessionEvents(SessionId session, SessionEvents events);
  // The session's process takes notice of revocations of shared memory it
  // imported (MemoryManager, "Revocation notices"): it hears of each through
  // its events' import_revoked and answers with RevocationSeen; a notice it
  // does not answer within kRevocationNoticeWait counts as seen.
  void TakeNoticeOfRevocations(SessionId session);
  void RevocationSeen(SessionId session, uint64_t notice);
  static constexpr absl::Duration kRevocationNoticeWait = absl::Seconds(2);
  // Ends a session as if its process exited: drops its init references and
  // releases everything it held. Returns false when it was not live.
  bool CloseSession(SessionId session);
  // The session's queue budget, for whoever reads its requests
  // (RuntimeOptions::readers_await_queue_room: QueueBudget::AwaitRoom before
  // taking one). It lasts as long as the session; null for a session that is gone.
  std::shared_ptr<QueueBudget> QueueBudgetOf(SessionId session) const ABSL_LOCKS_EXCLUDED(mu_);

  // Init reference counting (SPEC section 4; the client runs the callbacks).
  absl::StatusOr<uint64_t> InitCount(SessionId session);
  // When initialized, takes one more reference and returns the new count;
  // returns 0 when not initialized.
  absl::StatusOr<uint64_t> AddInitReference(SessionId session);
  absl::Status Initialize(SessionId session, const InitSettings& settings);
  absl::Status AbortInit(SessionId session);
  absl::StatusOr<uint64_t> DropInitReference(SessionId session);
  // Full finalize: count -> 0, every resource of the session released after
  // the work already launched has finished; `done` runs then.
  void Finalize(SessionId session, Done done);

  // Devices and contexts.
  int32_t DeviceCount() const;
  // The backend the devices come from ("sim", "acl"), for operators.
  std::string BackendName() const;
  // The operator takes a device out (aclctl device disable) or back in: a
  // disabled device refuses new references (aclrtSetDevice,
  // aclrtCreateContext) with ACL_ERROR_RT_NO_DEVICE; sessions that hold it
  // keep it.
  absl::Status SetDeviceEnabled(int32_t device, bool enabled);
  // Whether the backend can drive its devices now (hal::Backend::Health).
  absl::Status BackendHealth() const;
  std::string SocName() const;
  // What device `device_id` supports (an existing device).
  hal::DeviceFeatures Features(int32_t device_id) const;
  // The built-in kernels (name, number of 64-bit arguments).
  std::vector<std::pair<std::string, size_t>> Kernels() const;
  // Each device's address window, by device id (clients tell device from
  // host pointers with them).
  std::vector<hal::AddressRange> DeviceAddressRanges() const;
  // Takes a device reference; returns the device's default context.
  absl::StatusOr<ContextInfo> SetDevice(SessionId session, int32_t device_id);
  // Drops one reference (all with `force`); at zero the session's contexts,
  // streams, events and memory on the device are released once the work
  // already launched on them has finished (as CANN does: reset waits, it does
  // not discard). `done` runs then.
  void ResetDevice(SessionId session, int32_t device_id, bool force, Done done);
  absl::StatusOr<ContextInfo> CreateContext(SessionId session, int32_t device_id);
  // Waits for the work launched on the context's default stream, then releases it.
  void DestroyContext(SessionId session, ContextId context, Done done);
  void SynchronizeDevice(SessionId session, int32_t device_id, absl::Duration timeout, Done done);

  // Streams.
  // saturate_floats: its float results saturate (hal::StreamOptions).
  absl::StatusOr<StreamId> CreateStream(SessionId session, ContextId context, uint32_t priority,
                                        uint32_t flags, bool saturate_floats = false);
  // Waits for queued work, then releases the stream. With `force` it returns at
  // once and the launched work still runs to completion, as on a device.
  void DestroyStream(SessionId session, StreamId stream, bool force, Done done);
  // aclrtStreamAbort: discards the stream's queued work; its waiters get
  // ACL_ERROR_RT_STREAM_ABORT.
  absl::Status AbortStream(SessionId session, StreamId stream);
  // aclrtStreamStop: the task the stream is executing now (on its device, or
  // a wait it holds on the host) fails with ACL_ERROR_RT_INTERNAL_ERROR (what
  // CANN's synchronization reports after a stop); the tasks after it run.
  absl::Status StopStream(SessionId session, StreamId stream);
  void SynchronizeStream(SessionId session, StreamId stream, absl::Duration timeout, Done done);
  // True when every task of the stream has finished.
  absl::StatusOr<bool> StreamIdle(SessionId session, StreamId stream);
  absl::Status SetStreamFailureMode(SessionId session, StreamId stream, uint64_t mode);
  absl::Status SetStreamAllocator(SessionId session, StreamId stream, bool registered);

  // Tasks (asynchronous). `thread` is the submitting client thread, reported
  // in exception info. Returns the task id.
  absl::StatusOr<uint64_t> LaunchKernel(SessionId session, StreamId stream, uint64_t thread,
                                        KernelRequest kernel);
  // A run of built-in kernel launches on one stream (a client's batch): each
  // as LaunchKernel launches it, with one stream lookup, one queue charge and
  // one append for the run. One status per kernel, in order: a refused launch
  // does not keep those after it from running.
  struct ThreadKernel {
    uint64_t thread = 0;
    KernelRequest kernel;
  };
  std::vector<absl::Status> LaunchKernels(SessionId session, StreamId stream,
                                          std::vector<ThreadKernel> kernels);
  // Its ranges are checked and pinned now; a bad one fails the task.
  absl::StatusOr<uint64_t> EnqueueCopy(SessionId session, StreamId stream, uint64_t thread,
                                       const CopyRequest& copy);
  // A device-to-host copy for a process whose destination acld cannot map:
  // the bytes are read when the stream reaches the copy and go to `deliver`
  // (or an error: a bad range, ACL_ERROR_RT_STREAM_ABORT when discarded).
  absl::StatusOr<uint64_t> EnqueueCopyToClient(SessionId session, StreamId stream,
                                               uint64_t thread, uint64_t device_src,
                                               uint64_t count, Deliver deliver);
  absl::StatusOr<uint64_t> EnqueueMemset(SessionId session, StreamId stream, uint64_t thread,
                                         const MemsetRequest& memset);
  // Both ranges are checked now and must be memory of the stream's device; a
  // kind or type the backend does not reduce fails the task.
  absl::StatusOr<uint64_t> EnqueueReduce(SessionId session, StreamId stream, uint64_t thread,
                                         const ReduceRequest& reduce);
  // The 8 bytes waited on must be the session's memory on the stream's
  // device, aligned. The stream holds until the value is there: only its own
  // session's work is held (the wait takes one of its places on the device).
  absl::StatusOr<uint64_t> EnqueueValueWait(SessionId session, StreamId stream, uint64_t thread,
                                            const ValueWaitRequest& wait);
  // Sharing memory across processes by key (daemon/core/memory_exports.h).
  absl::StatusOr<std::string> ExportMemory(SessionId session, uint64_t address, uint64_t size,
                                           uint64_t flags);
  absl::Status SetImportPids(SessionId session, const std::string& key,
                             const std::vector<int32_t>& pids);
  absl::Status SetExportAttribute(SessionId session, const std::string& key, int32_t type,
                                  uint64_t value);
  // Checked against the session's kernel identity (pid and start time).
  absl::StatusOr<uint64_t> ImportMemory(SessionId session, const std::string& key);
  absl::Status CloseMemoryKey(SessionId session, const std::string& key);
  // The pid the kernel gave the session (aclrtDeviceGetBareTgid): the host's,
  // also for a process in a container's pid namespace.
  absl::StatusOr<int32_t> PeerPid(SessionId session);
  std::vector<MemoryExports::ExportView> SharingSnapshot() const { return exports_.Snapshot(); }

  // Virtual address management and physical memory sharing
  // (daemon/core/physical_memory.h). `device` is the caller's current device.
  absl::StatusOr<uint64_t> MallocPhysical(SessionId session, int32_t device, uint64_t size,
                                          bool huge_pages);
  absl::Status FreePhysical(SessionId session, uint64_t handle);
  absl::StatusOr<uint64_t> RetainPhysical(SessionId session, uint64_t address);
  absl::StatusOr<PhysicalMemory::Properties> PhysicalProperties(SessionId session,
                                                                uint64_t handle);
  absl::StatusOr<bool> MemoryAccess(SessionId session, uint64_t address, int32_t device);
  absl::StatusOr<uint64_t> ReserveAddresses(SessionId session, int32_t device, uint64_t size);
  absl::Status ReleaseAddresses(SessionId session, uint64_t address);
  absl::Status MapMemory(SessionId session, uint64_t address, uint64_t size, uint64_t offset,
                         uint64_t handle, bool accessible);
  absl::Status UnmapMemory(SessionId session, uint64_t address);
  absl::Status SetMemoryAccess(SessionId session, uint64_t address, uint64_t size, int32_t device,
                               bool readwrite);
  absl::StatusOr<uint64_t> ExportPhysical(SessionId session, uint64_t handle, bool pid_validation);
  absl::Status SetShareablePids(SessionId session, uint64_t shareable,
                                const std::vector<int32_t>& pids);
  // Checked against the session's kernel identity (pid and start time).
  absl::StatusOr<uint64_t> ImportPhysical(SessionId session, uint64_t shareable, int32_t device);
  std::vector<PhysicalMemory::ExportView> PhysicalSharingSnapshot() const {
    return physical_.Snapshot();
  }

  // IPC events (aclrtIpcGetEventHandle / aclrtIpcOpenEventHandle): a
  // capability key for an ACL_EVENT_IPC event of the session, and another
  // session's handle of that same event (its records and waits are the
  // owner's). The owner's destroy or end takes every other handle away;
  // work already queued on the event completes.
  absl::StatusOr<std::string> ShareEvent(SessionId session, EventId event);
  struct OpenedEvent {
    EventId id = 0;
    int32_t device = 0;
    uint32_t flags = 0;
  };
  absl::StatusOr<OpenedEvent> OpenSharedEvent(SessionId session, const std::string& key);
  struct SharedEventView {
    const char* kind = "event";  // or "notify"
    std::string key_prefix;
    SessionId owner = 0;
    int32_t device = 0;
    std::vector<SessionId> openers;
  };
  // IPC events and notifies.
  std::vector<SharedEventView> SharedEventsSnapshot() const;

  // IPC notifies (aclrtNotifyGetExportKey / SetImportPid / ImportByKey): as
  // IPC events, with the whitelist of shared memory unless the owner
  // disables it (daemon/core/kernel_whitelist.h).
  absl::StatusOr<std::string> ShareNotify(SessionId session, NotifyId notify, bool pid_validation);
  absl::Status SetNotifyImportPids(SessionId session, NotifyId notify,
                                   const std::vector<int32_t>& pids);
  struct OpenedNotify {
    NotifyId id = 0;
    int32_t device = 0;
  };
  absl::StatusOr<OpenedNotify> ImportNotify(SessionId session, const std::string& key);

  // Float overflow detection on the stream (hal/float_overflow.h), in stream
  // order, with the session's own status on the stream's device: another
  // session's tasks never raise it and its reset never clears another's.
  absl::StatusOr<uint64_t> EnqueueOverflow(SessionId session, StreamId stream, uint64_t thread,
                                           const OverflowRequest& overflow);
  // aclrtRandomNumAsync: every range (the numbers, the counter, the workspace,
  // inputs held in device memory) is checked now and must be memory of the
  // stream's device; the task's shape too (proto/acl/random_task_shape.h).
  absl::StatusOr<uint64_t> EnqueueRandom(SessionId session, StreamId stream, uint64_t thread,
                                         const RandomRequest& random);
  absl::StatusOr<uint64_t> RecordEvent(SessionId session, EventId event, StreamId stream,
                                       uint64_t thread);
  absl::StatusOr<uint64_t> ResetEvent(SessionId session, EventId event, StreamId stream,
                                      uint64_t thread);
  absl::StatusOr<uint64_t> StreamWaitEvent(SessionId session, StreamId stream, EventId event,
                                           uint64_t thread);
  absl::StatusOr<uint64_t> RecordNotify(SessionId session, NotifyId notify, StreamId stream,
                                        uint64_t thread);
  // `timeout_s`: aclrtWaitAndResetNotify's, in seconds; 0 waits for ever.
  absl::StatusOr<uint64_t> WaitAndResetNotify(SessionId session, NotifyId notify,
                                              StreamId stream, uint32_t timeout_s,
                                              uint64_t thread);
  // A host callback of the process (aclrtLaunchHostFunc, aclrtLaunchCallback):
  // when the stream reaches it the process is told; with `block` the stream
  // waits until AcknowledgeCallback.
  absl::StatusOr<uint64_t> EnqueueCallback(SessionId session, StreamId stream, uint64_t thread,
                                           uint64_t callback_id, bool block);
  absl::Status AcknowledgeCallback(SessionId session, uint64_t callback_id);

  // Kernel binaries (aclrtBinaryLoadFromData: `binary` is hostile bytes) on
  // one device, their functions by name, and launches of them.
  // `reserved`: what ReserveBinaryLoad charged for it (none: charged here).
  absl::StatusOr<BinaryId> LoadBinary(SessionId session, int32_t device_id,
                                      absl::string_view binary,
                                      std::unique_ptr<BinaryCharges::Held> reserved = nullptr);
  // Charges a binary of `bytes` to be loaded on `device_id`, if the device
  // takes binaries that large and it fits the session's limits: before the
  // daemon copies a binary out of a process's shared memory, so that loads
  // under way at once cannot together pass a limit each alone respects.
  // The charge goes with the returned one unless LoadBinary takes it.
  absl::StatusOr<std::unique_ptr<BinaryCharges::Held>> ReserveBinaryLoad(SessionId session,
                                                                         int32_t device_id,
                                                                         uint64_t bytes);
  // Its functions become invalid; launches already made still run.
  absl::Status UnloadBinary(SessionId session, BinaryId binary);
  absl::StatusOr<FunctionId> GetFunction(SessionId session, BinaryId binary,
                                         const std::string& name);
  absl::StatusOr<uint64_t> LaunchFunction(SessionId session, StreamId stream, uint64_t thread,
                                          FunctionLaunch launch);

  // Events.
  absl::StatusOr<EventId> CreateEvent(SessionId session, int32_t device_id, uint32_t flags);
  absl::Status DestroyEvent(SessionId session, EventId event);
  void SynchronizeEvent(SessionId session, EventId event, absl::Duration timeout, Done done);
  absl::StatusOr<EventStatus> QueryEvent(SessionId session, EventId event);
  absl::StatusOr<float> EventElapsedMs(SessionId session, EventId start, EventId end);
  // aclrtEventGetTimestamp: the device time, in microseconds (CANN's unit),
  // at which the event's latest record completed.
  absl::StatusOr<uint64_t> EventTimestampUs(SessionId session, EventId event);

  // Notifies (daemon/core/notify.h); they count against the events quota.
  absl::StatusOr<NotifyId> CreateNotify(SessionId session, int32_t device_id);
  absl::Status DestroyNotify(SessionId session, NotifyId notify);

  // Memory (synchronous calls).
  absl::StatusOr<uint64_t> Malloc(SessionId session, int32_t device_id, uint64_t size);
  absl::Status Free(SessionId session, uint64_t address);
  absl::Status Copy(SessionId session, const CopyRequest& copy);
  absl::Status Memset(SessionId session, const MemsetRequest& memset);
  // The same, checked and ready to run a piece at a time (Copy and Memset run
  // one to its end): what acld's shared threads run in slices.
  absl::StatusOr<PiecewiseTransfer> PrepareSyncCopy(SessionId session, const CopyRequest& copy);
  absl::StatusOr<PiecewiseTransfer> PrepareSyncMemset(SessionId session,
                                                      const MemsetRequest& memset);
  absl::StatusOr<MemInfo> GetMemInfo(SessionId session, int32_t device_id);
  // aclrtGetDeviceUtilizationRate: the whole device's figures, measured by
  // its backend (busy time, memory in use).
  absl::StatusOr<Utilization> GetUtilization(int32_t device_id);
  // aclrtGetStreamAvailableNum, aclrtGetEventAvailNum: what every limit
  // that refuses a new stream or event on the device leaves the session.
  absl::StatusOr<ObjectsAvailable> GetObjectsAvailable(SessionId session, int32_t device_id);

  // Quotas (0: no limit). A session that exceeds one gets
  // ACL_ERROR_RT_MEMORY_ALLOCATION / ACL_ERROR_RT_NO_STREAM_RESOURCE.
  absl::Status SetMemoryQuota(SessionId session, uint64_t bytes);
  absl::Status SetStreamQuota(SessionId session, uint32_t max_streams);
  void SetDefaultMemoryQuota(uint64_t bytes);
  void SetDefaultStreamQuota(uint32_t max_streams);
  // The session's share of each device's time against other sessions (>= 1).
  absl::Status SetWeight(SessionId session, uint32_t weight);

  // True when no stream of any session has unfinished work (shutdown drains).
  bool AllStreamsIdle() const;

  // Devices, sessions (their counts, not their handles) and tenants.
  RuntimeSnapshot Snapshot() const;
  // Every stream of session `only` (0: of every session), with its counts.
  std::vector<StreamSnapshot> StreamsSnapshot(SessionId only = 0) const;

  // Host memory the daemon mapped for a session, registered with the backend
  // (hal::Backend::RegisterHostMemory); keep the handle while it is mapped.
  std::shared_ptr<void> RegisterHostMemory(void* data, uint64_t bytes) {
    return backend_->RegisterHostMemory(data, bytes);
  }

 private:
  // A sharing call (export, import) that raced its session's end leaves no
  // key or grant behind for it.
  void ForgetSharingIfEnded(SessionId id) ABSL_LOCKS_EXCLUDED(mu_);
  // Who a session's process is, as a whitelist judges it (kernel_whitelist.h):
  // the pid and start time the kernel gave at its open, while that pid is
  // still that process. A session outlives its process when a child
  // inherited its connection, and by then the pid may be another's: such a
  // session passes no whitelist. Reads /proc, so not under the lock.
  absl::StatusOr<KernelIdentity> WhitelistIdentity(SessionId id) ABSL_LOCKS_EXCLUDED(mu_);
  // The session's end (CloseSession) has run. A call that made something
  // for its session without the lock held checks this after, and undoes
  // what the end could not see.
  bool Ended(SessionId id) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Session*> FindSession(SessionId session) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<Stream>> FindStream(SessionId session, StreamId stream)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<Event>> FindEvent(SessionId session, EventId event)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<Notify>> FindNotify(SessionId session, NotifyId notify)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status CheckDeviceId(int32_t device_id) const;
  absl::Status CheckNewDeviceReferenceLocked(const Session& session, int32_t device_id) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The device's default context of the session, created on first use.
  absl::StatusOr<ContextInfo> DefaultContextLocked(Session& session, int32_t device_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ContextInfo> NewContextLocked(Session& session, int32_t device_id,
                                               bool device_default)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Undoes a device reference taken by a call that then failed.
  void DropDeviceReferenceLocked(Session& session, int32_t device_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A stream of `session` on the device, charged to its tenant's share of
  // the device's streams (`call` names the API in a refusal).
  absl::StatusOr<std::shared_ptr<Stream>> NewStreamLocked(Session& session, int32_t device_id,
                                                          uint32_t priority, uint32_t flags,
                                                          const char* call,
                                                          bool saturate_floats = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `session` gives up its handle of `event` (a destroy, a reset, its end).
  // True when it owns the event: then every other session's handle goes too,
  // and the caller releases the event's waiters; an opener's handle going
  // leaves the event as it was.
  bool ForgetEventLocked(SessionId session, const std::shared_ptr<Event>& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An opener's handle whose owner went: gone, its destroy still succeeds.
  void RevokeHandleLocked(SessionId opener, uint64_t handle) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a notify.
  bool ForgetNotifyLocked(SessionId session, const std::shared_ptr<Notify>& notify)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `bytes` at `address`, checked to be the session's memory on the stream's
  // device (`what` names it in the error: "aclrtReduceAsync: dst").
  absl::StatusOr<ResolvedRange> ResolveForStream(SessionId session, const Stream& stream,
                                                 uint64_t address, uint64_t bytes,
                                                 absl::string_view what) const;
  // The session's float overflow status on `device`, made on first use.
  absl::StatusOr<std::shared_ptr<hal::OverflowStatus>> OverflowStatusOf(SessionId session,
                                                                        int32_t device);
  // The events and notifies a release lets go of: their waiters are answered
  // once the streams that record them have drained (at once, when discarded).
  struct ReleasedHandles {
    SessionId session = 0;
    std::vector<std::shared_ptr<Event>> events;  // the session's own
    // Other sessions' IPC events it had opened: only its own waits go.
    std::vector<std::shared_ptr<Event>> opened_events;
    std::vector<std::shared_ptr<Notify>> notifies;
    void ReleaseWaiters() const;
  };
  // What a session gave up: streams, events and notifies to close after mu_ is released
  // (closing completes waiters, which may write to a client).
  struct Released {
    std::vector<std::shared_ptr<Stream>> streams;
    // Streams already closing (a forced destroy) that a release waits for.
    std::vector<std::shared_ptr<Stream>> finishing;
    ReleasedHandles handles;
    std::vector<std::shared_ptr<hal::Executable>> binaries;  // unloaded with no lock held
    // The session's device memory (up to --max_allocations_per_session
    // blocks), given back with no lock held.
    std::vector<std::shared_ptr<void>> memory;
  };
  // Takes the session's handles and memory (on one device, when given) out of
  // the session; its memory is freed once no launched work pins it.
  Released ReleaseSessionResources(Session& session, std::optional<int32_t> device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes a context the session created (and its default stream) out of it.
  absl::Status DetachContextLocked(SessionId session, ContextId context, Released& released)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets released work finish, then closes it and calls `done` (no lock held).
  void DrainReleased(SessionId session, Released released, Done done) ABSL_LOCKS_EXCLUDED(mu_);
  // Discards released work at once: its session has ended.
  void DiscardReleased(Released released) ABSL_LOCKS_EXCLUDED(mu_);
  // The stream quota (the session's, its group's, its tenant's), closing
  // streams included.
  absl::Status CheckStreamQuotaLocked(const Session& session, const char* call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A quota group's process opens no IPC event or notify of a host device
  // outside its group: it could not name that device (its reply would be
  // refused) and would be left a handle to it.
  static absl::Status CheckGroupSees(const Session& session, int32_t device, const char* call);
  // The event quota (the session's and its tenant's), notifies included;
  // `code` is the call's own refusal (events or notifies).
  absl::Status CheckEventQuotaLocked(const Session& session, const char* call, int32_t code)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The context quota (the session's and its tenant's), default contexts excluded.
  absl::Status CheckContextQuotaLocked(const Session& session, const char* call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Called when a stream the session gave up has drained.
  void StreamDrained(SessionId session, StreamId stream) ABSL_LOCKS_EXCLUDED(mu_);
  // Brings each device up or down to match who needs it: all devices while the
  // host-wide init count is non-zero, otherwise those a session set.
  void UpdateDevicePower() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Charges the session's queue budget (waiting for room) and appends the task.
  absl::StatusOr<uint64_t> Enqueue(SessionId session, const std::shared_ptr<Stream>& stream,
                                   uint64_t thread, uint64_t payload_bytes, TaskFn task,
                                   std::function<void()> on_discard = nullptr,
                                   const char* waits_for = "work");
  // Charges a task of `payload_bytes` to the session's QueueBudget (waiting
  // for room); the charge is held until the task finished or was dropped.
  absl::StatusOr<std::shared_ptr<void>> ChargeTask(SessionId session, uint64_t payload_bytes)
      ABSL_LOCKS_EXCLUDED(mu_) {
    return ChargeTasks(session, 1, payload_bytes);
  }
  // Charges `tasks` tasks carrying `payload_bytes` in all, held together.
  // Never waits when readers await room (RuntimeOptions).
  absl::StatusOr<std::shared_ptr<void>> ChargeTasks(SessionId session, uint64_t tasks,
                                                    uint64_t payload_bytes)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The built-in kernel `name` of the stream's device (aclsimLaunchKernel).
  absl::StatusOr<const hal::Function*> BuiltinKernel(const Stream& stream,
                                                     const std::string& name) const;
  absl::StatusOr<PreparedCopy> PrepareCopy(SessionId session, const CopyRequest& copy) const;
  // Whether `bytes` more binary bytes fit the session's limit and its
  // tenant's.
  // The queue limit `tenant`'s sessions share (none in embedded mode).
  std::shared_ptr<TenantQueue> TenantQueueLocked(const Tenant& tenant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What each tenant holds together (RuntimeSnapshot::tenants).
  std::vector<TenantSnapshot> TenantsLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // A launch's core limits, checked against device `device_id`'s counts.
  absl::StatusOr<hal::CoreLimits> CheckCoreLimits(int32_t device_id,
                                                  const CoreLimits& limits) const;
  absl::StatusOr<KernelLaunch> PrepareLaunch(
      SessionId session, int32_t device_id, const hal::Function& function,
      std::shared_ptr<const void> executable, uint32_t block_dim, const CoreLimits& limits,
      std::string args, std::vector<Placeholder> placeholders);
  // aclrtLaunchKernel: reads the argument block from device memory when the
  // stream reaches the launch, then launches.
  absl::StatusOr<uint64_t> LaunchWithDeviceArgs(SessionId session,
                                                const std::shared_ptr<Stream>& stream,
                                                uint64_t thread, LoadedFunction function,
                                                const FunctionLaunch& launch);
  // Launches `function` (kept alive by `executable`) with its argument block.
  absl::StatusOr<uint64_t> Launch(SessionId session, const std::shared_ptr<Stream>& stream,
                                  uint64_t thread, const hal::Function& function,
                                  std::shared_ptr<const void> executable, uint32_t block_dim,
                                  const CoreLimits& limits, std::string args,
                                  std::vector<Placeholder> placeholders = {},
                                  FunctionId function_handle = 0);
  // Copies placeholder data to fresh device memory of the session and writes
  // its addresses into `args`; the memory is held by `pinned` only, so it
  // goes back once the launch has run.
  absl::Status PlacePlaceholders(SessionId session, int32_t device_id,
                                 std::vector<Placeholder> placeholders, std::string& args,
                                 PinnedMemory& pinned);
  absl::StatusOr<ResolvedRange> ResolveFill(SessionId session, const MemsetRequest& memset) const;
  // Charges the session's queue budget (waiting for room) and appends device work.
  absl::StatusOr<uint64_t> EnqueueDeviceWork(SessionId session,
                                             const std::shared_ptr<Stream>& stream,
                                             uint64_t thread, uint64_t payload_bytes,
                                             const char* what, DeviceWork work,
                                             DeviceDone done = nullptr,
                                             std::function<void()> on_discard = nullptr,
                                             DeviceWorkKind kind = {});
  // The session's event listeners (null: it ended or set none).
  std::shared_ptr<const SessionEvents> EventsOf(SessionId session) const;
  void ReportFailure(const TaskFailure& failure);
  void ReportOutput(const KernelOutput& output);

  // Declaration order is destruction order in reverse: the timer stops before
  // the broker and engines it calls, the engines before the memory their tasks
  // touch.
  const std::unique_ptr<hal::Backend> backend_;
  // Each tenant's streams and events on each device (the charges outlive it).
  DeviceObjectLedger device_objects_;
  MemoryManager memory_;
  MemoryExports exports_{memory_, BootTicksNow};
  PhysicalMemory physical_{memory_, *backend_, BootTicksNow};
  // IPC events by key.
  struct SharedEvent {
    std::shared_ptr<Event> event;
    std::map<SessionId, EventId> openers;  // session -> its handle of the event
  };
  std::map<std::string, SharedEvent> shared_events_ ABSL_GUARDED_BY(mu_);
  // IPC notifies by key.
  struct SharedNotify {
    std::shared_ptr<Notify> notify;
    SessionId owner = 0;
    bool pid_validation = true;
    KernelWhitelist whitelist;
    std::map<SessionId, NotifyId> openers;  // session -> its handle of the notify
  };
  std::map<std::string, SharedNotify> shared_notifies_ ABSL_GUARDED_BY(mu_);
  // The key of each shared Event or Notify, so that a destroy finds it at once.
  std::map<const void*, std::string> shared_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<StreamEngine>> engines_;  // one per device
  CallbackBroker broker_;
  // The deadline of each revocation notice not yet answered (at most one per
  // range a session still reaches after a revocation); an answer cancels it.
  // Before the timer: its callbacks use them until it stops.
  absl::Mutex notice_mu_;
  std::map<uint64_t, hal::Timer::TimerId> notice_deadlines_ ABSL_GUARDED_BY(notice_mu_);
  hal::Timer timer_;

  mutable absl::Mutex mu_;
  // Taken out by the operator (SetDeviceEnabled).
  std::set<int32_t> disabled_devices_ ABSL_GUARDED_BY(mu_);
  SessionTable sessions_ ABSL_GUARDED_BY(mu_);
  InitArbiter init_ ABSL_GUARDED_BY(mu_);
  uint64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;  // contexts, streams, events: never reused
  uint32_t default_max_streams_ ABSL_GUARDED_BY(mu_);
  const uint32_t default_max_contexts_;
  const uint32_t default_max_events_;
  const uint32_t max_streams_per_tenant_;
  const uint32_t max_contexts_per_tenant_;
  const uint32_t max_events_per_tenant_;
  const uint64_t max_queued_bytes_;
  const uint64_t max_queued_bytes_per_tenant_;
  // Shared by the budgets of each tenant's sessions (acld only).
  std::map<Tenant, std::weak_ptr<TenantQueue>> tenant_queues_ ABSL_GUARDED_BY(mu_);
  // What kernel binaries hold, per session and tenant, until the last
  // launch of each let go (its own lock).
  BinaryCharges binary_charges_;
  const absl::Duration queue_patience_;
  const bool readers_await_queue_room_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RUNTIME_H_
