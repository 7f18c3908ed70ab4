// The client's connection to acld: one gRPC Session stream per process.
//
// Calls from any thread are written to the stream in order; a reader thread
// matches replies to waiting callers by call id. When the stream breaks, every
// waiting and later call fails with ACL_ERROR_RT_SOCKET_CLOSE; nothing hangs.
#ifndef ACLD_CLIENT_REMOTE_TRANSPORT_H_
#define ACLD_CLIENT_REMOTE_TRANSPORT_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/transport.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acl_client {

class RemoteTransport : public Transport {
 public:
  // Connects to `socket_path` and opens this process's session. Fails fast with
  // ACL_ERROR_RT_SOCKET_CLOSE and a message saying how to fix it.
  static absl::StatusOr<std::unique_ptr<RemoteTransport>> Connect(const std::string& socket_path);
  ~RemoteTransport() override;

  void Close() override;

  absl::StatusOr<uint64_t> InitCount() override;
  absl::StatusOr<uint64_t> AddInitReference() override;
  absl::Status Initialize(const acld::InitSettings& settings) override;
  absl::Status AbortInit() override;
  absl::StatusOr<uint64_t> DropInitReference() override;
  absl::Status Finalize() override;
  absl::StatusOr<int32_t> DeviceCount() override;
  absl::Status SetDevice(int32_t device_id) override;
  absl::Status ResetDevice(int32_t device_id, bool force) override;

 private:
  struct PendingCall {
    bool done = false;
    acl::v1::Reply reply;
  };

  explicit RemoteTransport(std::string socket_path);

  // Sends `request` and waits for its reply (at most `timeout`). A reply with a
  // non-zero acl_error becomes that error.
  absl::StatusOr<acl::v1::Reply> Call(acl::v1::ClientMessage request,
                                      absl::Duration timeout = absl::InfiniteDuration());
  absl::StatusOr<uint64_t> CallForInitCount(acl::v1::ClientMessage request);
  void ReadReplies();
  absl::Status BrokenStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>>
      stream_;
  std::thread reader_;

  absl::Mutex close_mu_;  // serializes joining the reader
  absl::Mutex write_mu_;  // gRPC allows one writer at a time
  mutable absl::Mutex mu_;
  std::map<uint64_t, PendingCall*> pending_ ABSL_GUARDED_BY(mu_);
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> next_call_id_{1};
  std::atomic<int32_t> device_count_{-1};  // cached: fixed for the daemon's life
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_REMOTE_TRANSPORT_H_
