// The client's connection to acld: the Transport over one session per
// process. Three parts, one job each: the carrier (session_channel.h: the
// gRPC stream and the shared-memory channel; sending in order, batching
// asynchronous work, matching replies), the encoding of
// calls and replies (session_codec.h: pure functions, no I/O), and bulk bytes
// (bulk_copies.h: shared memory, staging, chunks).
//
// When the stream breaks, every waiting and later call fails with
// ACL_ERROR_RT_SOCKET_CLOSE; nothing hangs.
#ifndef ACLD_CLIENT_REMOTE_TRANSPORT_H_
#define ACLD_CLIENT_REMOTE_TRANSPORT_H_

#include <memory>
#include <string>

#include "client/bulk_copies.h"
#include "client/callback_dispatcher.h"
#include "client/session_channel.h"
#include "client/session_codec.h"
#include "client/transport.h"

namespace acl_client {

class RemoteTransport : public Transport {
 public:
  // What carries the session's messages (ACLD_TRANSPORT): the shared-memory
  // channel, opened on the identity socket (or, with a daemon older than
  // protocol 4, after a Hello on gRPC), or the gRPC stream alone.
  enum class Carrier { kSharedMemory, kGrpc };

  // Connects to `socket_path` and opens this process's session. Fails fast with
  // ACL_ERROR_RT_SOCKET_CLOSE and a message saying how to fix it.
  // Callbacks and task failures the daemon sends are handed to `callbacks`.
  // `initialize` (if set) goes to acld with the session's opening on the
  // shared-memory channel (SessionChannel::OpenDirect), which spares it a
  // round trip: the first Initialize, if with the same settings, answers it.
  static absl::StatusOr<std::unique_ptr<RemoteTransport>> Connect(
      const std::string& socket_path, Carrier carrier, CallbackDispatcher* callbacks,
      const acld::InitSettings* initialize = nullptr);
  ~RemoteTransport() override;

  void Close() override;
  void ForkedChild() override;
  int32_t DeviceCount() override { return session_.device_count; }
  std::string SocName() override { return session_.soc_name; }
  acld::DeviceFeatures Features(int32_t device_id) override {
    if (device_id < 0 || static_cast<size_t>(device_id) >= session_.device_features.size()) return {};
    return session_.device_features[device_id];
  }
  const std::vector<std::pair<std::string, size_t>>& Kernels() override { return session_.kernels; }
  const std::vector<acld::AddressRange>& DeviceAddresses() override {
    return session_.device_addresses;
  }

  absl::StatusOr<uint64_t> InitCount() override;
  absl::StatusOr<uint64_t> AddInitReference() override;
  absl::Status Initialize(const acld::InitSettings& settings) override;
  absl::Status AbortInit() override;
  absl::StatusOr<uint64_t> DropInitReference() override;
  absl::Status Finalize() override;

  absl::StatusOr<acld::ContextInfo> SetDevice(int32_t device_id) override;
  absl::Status ResetDevice(int32_t device_id, bool force) override;
  absl::Status SynchronizeDevice(int32_t device_id, int32_t timeout_ms) override;
  absl::StatusOr<acld::ContextInfo> CreateContext(int32_t device_id) override;
  absl::Status DestroyContext(uint64_t context) override;

  absl::StatusOr<uint64_t> CreateStream(uint64_t context, uint32_t priority,
                                        uint32_t flags, bool saturate_floats) override;
  absl::Status DestroyStream(uint64_t stream, bool force) override;
  absl::Status SynchronizeStream(uint64_t stream, int32_t timeout_ms) override;
  absl::StatusOr<bool> StreamIdle(uint64_t stream) override;
  absl::Status SetStreamFailureMode(uint64_t stream, uint64_t mode) override;
  absl::Status AbortStream(uint64_t stream) override;
  absl::Status StopStream(uint64_t stream) override;
  absl::Status SetStreamAllocator(uint64_t stream, bool registered) override;

  absl::StatusOr<uint64_t> LaunchKernel(uint64_t stream, uint64_t thread,
                                        const acld::KernelRequest& kernel) override;
  absl::StatusOr<uint64_t> CopyAsync(uint64_t stream, uint64_t thread,
                                     const HostCopy& copy) override;
  absl::StatusOr<uint64_t> MemsetAsync(uint64_t stream, uint64_t thread,
                                       const acld::MemsetRequest& memset) override;
  absl::StatusOr<uint64_t> ReduceAsync(uint64_t stream, uint64_t thread,
                                       const acld::ReduceRequest& reduce) override;
  absl::StatusOr<uint64_t> ValueWaitAsync(uint64_t stream, uint64_t thread,
                                          const acld::ValueWaitRequest& wait) override;
  absl::StatusOr<uint64_t> OverflowAsync(uint64_t stream, uint64_t thread,
                                         const acld::OverflowRequest& overflow) override;
  absl::StatusOr<uint64_t> RandomAsync(uint64_t stream, uint64_t thread,
                                       const acld::RandomRequest& random) override;
  absl::StatusOr<uint64_t> RecordEvent(uint64_t event, uint64_t stream, uint64_t thread) override;
  absl::StatusOr<uint64_t> ResetEvent(uint64_t event, uint64_t stream, uint64_t thread) override;
  absl::StatusOr<uint64_t> StreamWaitEvent(uint64_t stream, uint64_t event,
                                           uint64_t thread) override;
  absl::StatusOr<uint64_t> RecordNotify(uint64_t notify, uint64_t stream,
                                        uint64_t thread) override;
  absl::StatusOr<uint64_t> WaitAndResetNotify(uint64_t notify, uint64_t stream,
                                              uint32_t timeout_s, uint64_t thread) override;
  absl::StatusOr<uint64_t> LaunchCallback(uint64_t stream, uint64_t thread, uint64_t callback_id,
                                          bool block) override;
  void AcknowledgeCallback(uint64_t callback_id) override;

  absl::StatusOr<uint64_t> LoadBinary(int32_t device_id, absl::string_view binary) override;
  absl::Status UnloadBinary(uint64_t binary) override;
  absl::StatusOr<uint64_t> GetFunction(uint64_t binary, const std::string& name) override;
  absl::StatusOr<uint64_t> LaunchFunction(uint64_t stream, uint64_t thread,
                                          const acld::FunctionLaunch& launch) override;
  absl::StatusOr<uint64_t> CreateEvent(int32_t device_id, uint32_t flags) override;
  absl::Status DestroyEvent(uint64_t event) override;
  absl::StatusOr<uint64_t> CreateNotify(int32_t device_id) override;
  absl::Status DestroyNotify(uint64_t notify) override;
  absl::Status SynchronizeEvent(uint64_t event, int32_t timeout_ms) override;
  absl::StatusOr<acld::EventStatus> QueryEvent(uint64_t event) override;
  absl::StatusOr<float> EventElapsedMs(uint64_t start, uint64_t end) override;
  absl::StatusOr<uint64_t> EventTimestampUs(uint64_t event) override;

  absl::StatusOr<uint64_t> Malloc(int32_t device_id, uint64_t size) override;
  absl::StatusOr<std::string> ExportMemory(uint64_t address, uint64_t size,
                                           uint64_t flags) override;
  absl::Status SetImportPids(const std::string& key, const std::vector<int32_t>& pids) override;
  absl::Status SetExportAttribute(const std::string& key, int32_t type, uint64_t value) override;
  absl::StatusOr<uint64_t> ImportMemory(const std::string& key) override;
  absl::StatusOr<uint64_t> MallocPhysical(int32_t device_id, uint64_t size,
                                          bool huge_pages) override;
  absl::StatusOr<uint64_t> RetainPhysical(uint64_t address) override;
  absl::StatusOr<acld::PhysicalProperties> PhysicalProperties(uint64_t handle) override;
  absl::StatusOr<bool> MemoryAccess(uint64_t address, int32_t device_id) override;
  absl::Status FreePhysical(uint64_t handle) override;
  absl::StatusOr<uint64_t> ReserveAddresses(int32_t device_id, uint64_t size) override;
  absl::Status ReleaseAddresses(uint64_t address) override;
  absl::Status MapMemory(uint64_t address, uint64_t size, uint64_t offset,
                                 uint64_t handle, bool accessible) override;
  absl::Status UnmapMemory(uint64_t address) override;
  absl::Status SetMemoryAccess(uint64_t address, uint64_t size, int32_t device_id,
                                       bool readwrite) override;
  absl::StatusOr<uint64_t> ExportPhysical(uint64_t handle, bool pid_validation) override;
  absl::Status SetShareablePids(uint64_t shareable, const std::vector<int32_t>& pids) override;
  absl::StatusOr<uint64_t> ImportPhysical(uint64_t shareable, int32_t device_id) override;
  absl::Status CloseMemoryKey(const std::string& key) override;
  absl::StatusOr<std::string> ShareEvent(uint64_t event) override;
  absl::StatusOr<acld::SharedEventInfo> OpenSharedEvent(const std::string& key) override;
  absl::StatusOr<std::string> ShareNotify(uint64_t notify, bool pid_validation) override;
  absl::Status SetNotifyImportPids(uint64_t notify, const std::vector<int32_t>& pids) override;
  absl::StatusOr<acld::SharedNotifyInfo> ImportNotify(const std::string& key) override;
  absl::StatusOr<int32_t> PeerPid() override;
  absl::Status Free(uint64_t address) override;
  absl::Status Copy(const HostCopy& copy) override;
  absl::Status Memset(const acld::MemsetRequest& memset) override;
  absl::StatusOr<acld::MemInfo> GetMemInfo(int32_t device_id) override;
  absl::StatusOr<acld::Utilization> GetUtilization(int32_t device_id) override;
  absl::StatusOr<acld::ObjectsAvailable> GetObjectsAvailable(int32_t device_id) override;
  absl::StatusOr<void*> MallocHost(uint64_t size) override;
  absl::Status FreeHost(void* pointer) override;
  bool IsHostMemory(const void* pointer, uint64_t count) const override {
    return bulk_.IsHostMemory(pointer, count);
  }

 private:
  // The session opened on the identity socket (protocol 4: no gRPC).
  static absl::StatusOr<std::unique_ptr<RemoteTransport>> ConnectDirect(
      const std::string& socket_path, CallbackDispatcher* callbacks,
      const acld::InitSettings* initialize);
  // The session opened with a Hello on a gRPC stream (the gRPC carrier, or a
  // daemon older than protocol 4); once.
  static absl::StatusOr<std::unique_ptr<RemoteTransport>> ConnectOverGrpc(
      const std::string& socket_path, Carrier carrier, CallbackDispatcher* callbacks);
  RemoteTransport(std::unique_ptr<SessionChannel> channel, const std::string& socket_path);

  // Destroyed in reverse: the bulk copies before the channel they use.
  std::unique_ptr<SessionChannel> channel_;
  BulkCopies bulk_;
  codec::SessionInfo session_;  // what the daemon offered at Hello
  // The Initialize sent as the session opened (Connect's `initialize`), until
  // Initialize takes its answer. Lifecycle, under its lock, is the only caller.
  std::shared_ptr<SessionChannel::PendingCall> opening_initialize_;
  acld::InitSettings opening_settings_;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_REMOTE_TRANSPORT_H_
