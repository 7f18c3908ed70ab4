// Hand-made sessions for tests that play a hostile client: the runtime
// protocol spoken directly over gRPC, without libascendcl's manners.
#ifndef ACLD_TESTS_RAW_SESSION_H_
#define ACLD_TESTS_RAW_SESSION_H_

#include <memory>
#include <string>

#include "grpcpp/client_context.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld_test {

// A one-time identity token from the daemon's side socket (`<socket>.peer`),
// or "" when none came.
std::string FetchToken(const std::string& peer_socket_path);

// One Session stream on its own connection, opened with a valid Hello.
class RawSession {
 public:
  using Stream = grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>;

  // Connects to the runtime socket `socket` and says Hello (answered when
  // `read_hello_reply`; a session that must not read leaves it unread).
  explicit RawSession(const std::string& socket, bool read_hello_reply = true);
  ~RawSession();  // cancels the stream

  bool opened() const { return opened_; }
  Stream& stream() { return *stream_; }
  // Writes `message` with `call_id`; false when the stream is broken.
  bool Send(acl::v1::ClientMessage message, uint64_t call_id = 0);
  // The next Reply (skipping events); false when the stream ended.
  bool NextReply(acl::v1::ServerMessage* reply);
  void Cancel() { context_.TryCancel(); }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;
  bool opened_ = false;
};

}  // namespace acld_test

#endif  // ACLD_TESTS_RAW_SESSION_H_
