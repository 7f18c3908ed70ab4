// The client's connection to acld: one gRPC Session stream per process.
//
// Calls from any thread are written to the stream in order; a reader thread
// matches replies to waiting callers by call id. Asynchronous operations are
// appended to a batch that a writer thread sends while the application keeps
// going, so a launch costs no round trip and batches grow under load; any
// call flushes the batch first, which keeps the session's order. Bulk bytes
// go through shared memory: aclrtMallocHost blocks and a staging area.
//
// When the stream breaks, every waiting and later call fails with
// ACL_ERROR_RT_SOCKET_CLOSE; nothing hangs.
#ifndef ACLD_CLIENT_REMOTE_TRANSPORT_H_
#define ACLD_CLIENT_REMOTE_TRANSPORT_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/callback_dispatcher.h"
#include "client/host_blocks.h"
#include "client/transport.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acl_client {

class RemoteTransport : public Transport {
 public:
  // Connects to `socket_path` and opens this process's session. Fails fast with
  // ACL_ERROR_RT_SOCKET_CLOSE and a message saying how to fix it.
  // Callbacks and task failures the daemon sends are handed to `callbacks`.
  static absl::StatusOr<std::unique_ptr<RemoteTransport>> Connect(const std::string& socket_path,
                                                                  CallbackDispatcher* callbacks);
  ~RemoteTransport() override;

  void Close() override;
  int32_t DeviceCount() override { return device_count_; }
  std::string SocName() override { return soc_name_; }
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
                                        uint32_t flags) override;
  absl::Status DestroyStream(uint64_t stream, bool force) override;
  absl::Status SynchronizeStream(uint64_t stream, int32_t timeout_ms) override;
  absl::StatusOr<bool> StreamIdle(uint64_t stream) override;
  absl::Status SetStreamFailureMode(uint64_t stream, uint64_t mode) override;
  absl::Status AbortStream(uint64_t stream) override;
  absl::Status SetStreamAllocator(uint64_t stream, bool registered) override;

  absl::StatusOr<uint64_t> LaunchKernel(uint64_t stream, uint64_t thread,
                                        const acld::KernelRequest& kernel) override;
  absl::StatusOr<uint64_t> CopyAsync(uint64_t stream, uint64_t thread,
                                     const HostCopy& copy) override;
  absl::StatusOr<uint64_t> MemsetAsync(uint64_t stream, uint64_t thread,
                                       const acld::MemsetRequest& memset) override;
  absl::StatusOr<uint64_t> RecordEvent(uint64_t event, uint64_t stream, uint64_t thread) override;
  absl::StatusOr<uint64_t> ResetEvent(uint64_t event, uint64_t stream, uint64_t thread) override;
  absl::StatusOr<uint64_t> StreamWaitEvent(uint64_t stream, uint64_t event,
                                           uint64_t thread) override;
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
  absl::Status SynchronizeEvent(uint64_t event, int32_t timeout_ms) override;
  absl::StatusOr<acld::EventStatus> QueryEvent(uint64_t event) override;
  absl::StatusOr<float> EventElapsedMs(uint64_t start, uint64_t end) override;

  absl::StatusOr<uint64_t> Malloc(int32_t device_id, uint64_t size) override;
  absl::Status Free(uint64_t address) override;
  absl::Status Copy(const HostCopy& copy) override;
  absl::Status Memset(const acld::MemsetRequest& memset) override;
  absl::StatusOr<acld::MemInfo> GetMemInfo(int32_t device_id) override;
  absl::StatusOr<void*> MallocHost(uint64_t size) override;
  absl::Status FreeHost(void* pointer) override;

 private:
  struct PendingCall {
    bool done = false;
    acl::v1::Reply reply;
  };
  struct Segment {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    uint64_t id = 0;
  };

  RemoteTransport(std::string socket_path, CallbackDispatcher* callbacks);

  // Sends `request` (after every batched asynchronous operation) and returns
  // the handle to wait on.
  std::shared_ptr<PendingCall> Start(acl::v1::ClientMessage request);
  // Waits for the reply (at most `timeout`); a non-zero acl_error becomes that error.
  absl::StatusOr<acl::v1::Reply> Finish(const std::shared_ptr<PendingCall>& call,
                                        absl::Duration timeout = absl::InfiniteDuration());
  absl::StatusOr<acl::v1::Reply> Call(acl::v1::ClientMessage request,
                                      absl::Duration timeout = absl::InfiniteDuration());
  absl::Status CallStatus(acl::v1::ClientMessage request);
  absl::StatusOr<uint64_t> CallForInitCount(acl::v1::ClientMessage request);
  absl::StatusOr<uint64_t> CallForHandle(acl::v1::ClientMessage request);
  absl::StatusOr<acld::ContextInfo> CallForContext(acl::v1::ClientMessage request);

  // Appends an asynchronous operation to the batch; returns its task id.
  uint64_t Submit(acl::v1::AsyncOp op, size_t payload_bytes = 0);
  // The id of a task enqueued outside the batch.
  uint64_t TakeTaskId(uint64_t stream);
  // Writes the batch (and `then`, if any) while holding the write lock.
  bool WriteBatchLocked(const acl::v1::ClientMessage* then)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void FlushLoop();
  // Reads until the stream ends, then takes its final status (Finish).
  void ReadReplies();
  // After a failed write: waits (briefly) for the reader to learn why.
  void MarkBroken();
  absl::Status BrokenStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Shared memory.
  absl::StatusOr<Segment> CreateSegment(uint64_t size);
  void DestroySegment(const Segment& segment);
  absl::Status EnsureStaging() ABSL_EXCLUSIVE_LOCKS_REQUIRED(staging_mu_);
  absl::Status StagedCopyToDevice(const HostCopy& copy);
  absl::Status StagedCopyToHost(const HostCopy& copy);
  // The host side of `copy` as a shared memory reference, when it has one.
  bool SetSharedHost(const HostCopy& copy, acl::v1::CopyRequest& proto) const;

  const std::string socket_path_;
  CallbackDispatcher* const callbacks_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>> stream_;
  std::thread reader_;
  std::thread flusher_;

  int32_t device_count_ = 0;
  std::string soc_name_;
  std::vector<std::pair<std::string, size_t>> kernels_;
  std::vector<acld::AddressRange> device_addresses_;

  absl::Mutex close_mu_;  // serializes joining the threads

  // Lock order: write_mu_, then batch_mu_, then mu_.
  absl::Mutex write_mu_;  // gRPC allows one writer at a time; also orders batches
  absl::Mutex batch_mu_;
  acl::v1::ClientMessage batch_ ABSL_GUARDED_BY(batch_mu_);
  size_t batch_bytes_ ABSL_GUARDED_BY(batch_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(batch_mu_) = false;
  // The daemon numbers each stream's tasks 1, 2, ...; so does the client, in
  // submission order, without asking (aclrtGetThreadLastTaskId).
  std::map<uint64_t, uint64_t> task_ids_ ABSL_GUARDED_BY(batch_mu_);

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<PendingCall>> pending_ ABSL_GUARDED_BY(mu_);
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::string ended_reason_ ABSL_GUARDED_BY(mu_);  // why the daemon ended the session
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);   // the stream's final status, once over
  std::atomic<uint64_t> next_call_id_{1};

  HostBlocks host_blocks_;  // aclrtMallocHost blocks; tag = segment id
  absl::Mutex staging_mu_;  // one staged bulk copy at a time
  Segment staging_ ABSL_GUARDED_BY(staging_mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_REMOTE_TRANSPORT_H_
