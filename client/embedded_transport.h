// ACLD_ADDRESS=embedded: the runtime core runs inside the application process.
// Same semantics as the daemon, no IPC; single process only. Also the honest
// in-process baseline of the benchmarks.
#ifndef ACLD_CLIENT_EMBEDDED_TRANSPORT_H_
#define ACLD_CLIENT_EMBEDDED_TRANSPORT_H_

#include <memory>

#include "client/callback_dispatcher.h"
#include "client/host_blocks.h"
#include "client/transport.h"
#include "daemon/core/runtime.h"

namespace acl_client {

class EmbeddedTransport : public Transport {
 public:
  // The devices of ACLD_BACKEND (default sim, as the daemon's defaults: 2
  // devices of 4 GiB committed lazily, ACLD_SIM_DEVICES and
  // ACLD_SIM_DEVICE_MEMORY; acl: the vendor runtime ACLD_BACKEND_LIBRARY,
  // loaded with RTLD_DEEPBIND so that its own acl* calls stay inside it).
  // Callbacks and task failures are handed to `callbacks`.
  static absl::StatusOr<std::unique_ptr<EmbeddedTransport>> Create(
      CallbackDispatcher* callbacks);
  EmbeddedTransport(std::unique_ptr<hal::Backend> backend, CallbackDispatcher* callbacks);
  ~EmbeddedTransport() override;

  void Close() override;
  int32_t DeviceCount() override { return runtime_->DeviceCount(); }
  std::string SocName() override { return runtime_->SocName(); }
  acld::DeviceFeatures Features(int32_t device_id) override {
    if (device_id < 0 || device_id >= runtime_->DeviceCount()) return {};
    const hal::DeviceFeatures features = runtime_->Features(device_id);
    return {features.cann_attributes, features.capabilities, features.device_info,
            features.peers, features.float_overflow, features.address_granularity};
  }
  const std::vector<std::pair<std::string, size_t>>& Kernels() override { return kernels_; }
  const std::vector<acld::AddressRange>& DeviceAddresses() override { return device_addresses_; }

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
    return host_blocks_.Find(pointer, count).has_value();
  }

 private:
  // The core copy of `copy`; with `stage_pageable`, pageable host-to-device
  // bytes are copied now (the application may reuse its buffer at once).
  acld::CopyRequest ToCore(const HostCopy& copy, bool stage_pageable) const;

  std::unique_ptr<acld::Runtime> runtime_;
  acld::SessionId session_;
  std::vector<std::pair<std::string, size_t>> kernels_;
  std::vector<acld::AddressRange> device_addresses_;
  HostBlocks host_blocks_;
};

// Runs `start` with a completion and waits for it.
absl::Status WaitForCompletion(const std::function<void(acld::Done)>& start);

// -1 forever, 0 poll, > 0 milliseconds.
absl::Duration TimeoutFromMs(int32_t timeout_ms);

}  // namespace acl_client

#endif  // ACLD_CLIENT_EMBEDDED_TRANSPORT_H_
