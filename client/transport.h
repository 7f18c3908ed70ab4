// How the client library reaches the runtime core: over the daemon's socket
// (RemoteTransport) or in-process (EmbeddedTransport, ACLD_ADDRESS=embedded).
//
// Every method acts for this process's session. Errors carry the exact
// aclError (proto/acl/acl_status.h); a lost daemon is ACL_ERROR_RT_SOCKET_CLOSE.
// Handles (contexts, streams, events) and device addresses are the core's ids.
// Asynchronous methods may report an error later, at a synchronization.
#ifndef ACLD_CLIENT_TRANSPORT_H_
#define ACLD_CLIENT_TRANSPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/acl/address_range.h"
#include "proto/acl/transport_types.h"

namespace acl_client {

// A copy as the application asked for it: host pointers are the
// application's, device addresses the daemon's.
struct HostCopy {
  acld::CopyDirection direction = acld::CopyDirection::kHostToDevice;
  uint64_t device_dst = 0;
  uint64_t device_src = 0;
  const void* host_src = nullptr;  // host-to-device
  void* host_dst = nullptr;        // device-to-host
  uint64_t count = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Ends the session now (process exit). Later calls fail with SOCKET_CLOSE.
  virtual void Close() = 0;
  // In a child of fork() (an atfork handler: only async-signal-safe work):
  // let go of what would keep the parent's session open.
  virtual void ForkedChild() {}

  // What the daemon offers: devices, SoC name, built-in kernels (name, args).
  virtual int32_t DeviceCount() = 0;
  virtual std::string SocName() = 0;
  // What device `device_id` supports (empty for a device that does not exist).
  virtual acld::DeviceFeatures Features(int32_t device_id) = 0;
  virtual const std::vector<std::pair<std::string, size_t>>& Kernels() = 0;
  // Each device's address window (a device pointer lies in one of them).
  virtual const std::vector<acld::AddressRange>& DeviceAddresses() = 0;

  // Lifecycle.
  virtual absl::StatusOr<uint64_t> InitCount() = 0;
  // New count when the process was initialized (one more reference), else 0.
  virtual absl::StatusOr<uint64_t> AddInitReference() = 0;
  virtual absl::Status Initialize(const acld::InitSettings& settings) = 0;
  virtual absl::Status AbortInit() = 0;
  virtual absl::StatusOr<uint64_t> DropInitReference() = 0;
  virtual absl::Status Finalize() = 0;

  // Devices and contexts.
  virtual absl::StatusOr<acld::ContextInfo> SetDevice(int32_t device_id) = 0;
  virtual absl::Status ResetDevice(int32_t device_id, bool force) = 0;
  virtual absl::Status SynchronizeDevice(int32_t device_id, int32_t timeout_ms) = 0;
  virtual absl::StatusOr<acld::ContextInfo> CreateContext(int32_t device_id) = 0;
  virtual absl::Status DestroyContext(uint64_t context) = 0;

  // Streams.
  // saturate_floats: the process's saturation mode on the device
  // (aclrtSetDeviceSatMode), fixed for the stream's life.
  virtual absl::StatusOr<uint64_t> CreateStream(uint64_t context, uint32_t priority,
                                                uint32_t flags, bool saturate_floats) = 0;
  virtual absl::Status DestroyStream(uint64_t stream, bool force) = 0;
  virtual absl::Status SynchronizeStream(uint64_t stream, int32_t timeout_ms) = 0;
  virtual absl::StatusOr<bool> StreamIdle(uint64_t stream) = 0;
  virtual absl::Status SetStreamFailureMode(uint64_t stream, uint64_t mode) = 0;
  virtual absl::Status AbortStream(uint64_t stream) = 0;
  virtual absl::Status StopStream(uint64_t stream) = 0;
  virtual absl::Status SetStreamAllocator(uint64_t stream, bool registered) = 0;

  // Asynchronous work on a stream; `thread` is the submitting thread (its
  // kernel thread id, for exception info). Each returns the id of the last
  // task it enqueued (ids count up from 1 per stream).
  virtual absl::StatusOr<uint64_t> LaunchKernel(uint64_t stream, uint64_t thread,
                                                const acld::KernelRequest& kernel) = 0;
  virtual absl::StatusOr<uint64_t> CopyAsync(uint64_t stream, uint64_t thread,
                                             const HostCopy& copy) = 0;
  virtual absl::StatusOr<uint64_t> MemsetAsync(uint64_t stream, uint64_t thread,
                                               const acld::MemsetRequest& memset) = 0;
  virtual absl::StatusOr<uint64_t> ReduceAsync(uint64_t stream, uint64_t thread,
                                               const acld::ReduceRequest& reduce) = 0;
  virtual absl::StatusOr<uint64_t> ValueWaitAsync(uint64_t stream, uint64_t thread,
                                                  const acld::ValueWaitRequest& wait) = 0;
  virtual absl::StatusOr<uint64_t> OverflowAsync(uint64_t stream, uint64_t thread,
                                                 const acld::OverflowRequest& overflow) = 0;
  virtual absl::StatusOr<uint64_t> RandomAsync(uint64_t stream, uint64_t thread,
                                               const acld::RandomRequest& random) = 0;
  virtual absl::StatusOr<uint64_t> RecordEvent(uint64_t event, uint64_t stream,
                                               uint64_t thread) = 0;
  virtual absl::StatusOr<uint64_t> ResetEvent(uint64_t event, uint64_t stream, uint64_t thread) = 0;
  virtual absl::StatusOr<uint64_t> StreamWaitEvent(uint64_t stream, uint64_t event,
                                                   uint64_t thread) = 0;
  virtual absl::StatusOr<uint64_t> RecordNotify(uint64_t notify, uint64_t stream,
                                                uint64_t thread) = 0;
  // `timeout_s`: seconds, 0 waits for ever (aclrtWaitAndResetNotify).
  virtual absl::StatusOr<uint64_t> WaitAndResetNotify(uint64_t notify, uint64_t stream,
                                                      uint32_t timeout_s, uint64_t thread) = 0;
  // A callback the dispatcher holds under `callback_id` (SPEC section 6).
  virtual absl::StatusOr<uint64_t> LaunchCallback(uint64_t stream, uint64_t thread,
                                                  uint64_t callback_id, bool block) = 0;
  // The process finished a blocking callback.
  virtual void AcknowledgeCallback(uint64_t callback_id) = 0;

  // Kernel binaries and their functions (handles are the core's ids).
  virtual absl::StatusOr<uint64_t> LoadBinary(int32_t device_id, absl::string_view binary) = 0;
  virtual absl::Status UnloadBinary(uint64_t binary) = 0;
  virtual absl::StatusOr<uint64_t> GetFunction(uint64_t binary, const std::string& name) = 0;
  virtual absl::StatusOr<uint64_t> LaunchFunction(uint64_t stream, uint64_t thread,
                                                  const acld::FunctionLaunch& launch) = 0;

  // Events.
  virtual absl::StatusOr<uint64_t> CreateEvent(int32_t device_id, uint32_t flags) = 0;
  virtual absl::Status DestroyEvent(uint64_t event) = 0;
  virtual absl::Status SynchronizeEvent(uint64_t event, int32_t timeout_ms) = 0;
  virtual absl::StatusOr<acld::EventStatus> QueryEvent(uint64_t event) = 0;
  virtual absl::StatusOr<float> EventElapsedMs(uint64_t start, uint64_t end) = 0;
  // When the event's latest record completed, in microseconds of device time.
  virtual absl::StatusOr<uint64_t> EventTimestampUs(uint64_t event) = 0;

  // Notifies.
  virtual absl::StatusOr<uint64_t> CreateNotify(int32_t device_id) = 0;
  virtual absl::Status DestroyNotify(uint64_t notify) = 0;

  // Memory.
  virtual absl::StatusOr<uint64_t> Malloc(int32_t device_id, uint64_t size) = 0;

  // Sharing memory across processes by key (aclrtIpcMem*).
  virtual absl::StatusOr<std::string> ExportMemory(uint64_t address, uint64_t size,
                                                   uint64_t flags) = 0;
  virtual absl::Status SetImportPids(const std::string& key, const std::vector<int32_t>& pids) = 0;
  virtual absl::Status SetExportAttribute(const std::string& key, int32_t type,
                                          uint64_t value) = 0;
  virtual absl::StatusOr<uint64_t> ImportMemory(const std::string& key) = 0;
  virtual absl::Status CloseMemoryKey(const std::string& key) = 0;
  // Virtual address management and physical memory sharing
  // (aclrtMallocPhysical, aclrtReserveMemAddress, aclrtMapMem,
  // aclrtMemExportToShareableHandle and their calls).
  virtual absl::StatusOr<uint64_t> MallocPhysical(int32_t device_id, uint64_t size,
                                                  bool huge_pages) = 0;
  virtual absl::Status FreePhysical(uint64_t handle) = 0;
  virtual absl::StatusOr<uint64_t> RetainPhysical(uint64_t address) = 0;
  virtual absl::StatusOr<acld::PhysicalProperties> PhysicalProperties(uint64_t handle) = 0;
  virtual absl::StatusOr<bool> MemoryAccess(uint64_t address, int32_t device_id) = 0;
  virtual absl::StatusOr<uint64_t> ReserveAddresses(int32_t device_id, uint64_t size) = 0;
  virtual absl::Status ReleaseAddresses(uint64_t address) = 0;
  virtual absl::Status MapMemory(uint64_t address, uint64_t size, uint64_t offset,
                                 uint64_t handle, bool accessible) = 0;
  virtual absl::Status UnmapMemory(uint64_t address) = 0;
  virtual absl::Status SetMemoryAccess(uint64_t address, uint64_t size, int32_t device_id,
                                       bool readwrite) = 0;
  virtual absl::StatusOr<uint64_t> ExportPhysical(uint64_t handle, bool pid_validation) = 0;
  virtual absl::Status SetShareablePids(uint64_t shareable, const std::vector<int32_t>& pids) = 0;
  virtual absl::StatusOr<uint64_t> ImportPhysical(uint64_t shareable, int32_t device_id) = 0;
  // IPC events (aclrtIpcGetEventHandle / aclrtIpcOpenEventHandle).
  virtual absl::StatusOr<std::string> ShareEvent(uint64_t event) = 0;
  virtual absl::StatusOr<acld::SharedEventInfo> OpenSharedEvent(const std::string& key) = 0;
  // IPC notifies (aclrtNotifyGetExportKey / SetImportPid / ImportByKey).
  virtual absl::StatusOr<std::string> ShareNotify(uint64_t notify, bool pid_validation) = 0;
  virtual absl::Status SetNotifyImportPids(uint64_t notify, const std::vector<int32_t>& pids) = 0;
  virtual absl::StatusOr<acld::SharedNotifyInfo> ImportNotify(const std::string& key) = 0;
  // The pid the daemon knows this process by (aclrtDeviceGetBareTgid).
  virtual absl::StatusOr<int32_t> PeerPid() = 0;
  virtual absl::Status Free(uint64_t address) = 0;
  virtual absl::Status Copy(const HostCopy& copy) = 0;
  virtual absl::Status Memset(const acld::MemsetRequest& memset) = 0;
  virtual absl::StatusOr<acld::MemInfo> GetMemInfo(int32_t device_id) = 0;
  virtual absl::StatusOr<acld::Utilization> GetUtilization(int32_t device_id) = 0;
  virtual absl::StatusOr<acld::ObjectsAvailable> GetObjectsAvailable(int32_t device_id) = 0;
  // Page-locked host memory: shared with the daemon, so copies from and to it
  // cost one memcpy in the daemon and may run asynchronously.
  virtual absl::StatusOr<void*> MallocHost(uint64_t size) = 0;
  virtual absl::Status FreeHost(void* pointer) = 0;
  // Whether [pointer, pointer + count) lies in one aclrtMallocHost block.
  virtual bool IsHostMemory(const void* pointer, uint64_t count) const = 0;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_TRANSPORT_H_
