// Hand-made sessions for tests that play a hostile client: the runtime
// protocol spoken directly over gRPC, and the identity socket spoken by hand,
// without libascendcl's manners.
#ifndef ACLD_TESTS_RAW_SESSION_H_
#define ACLD_TESTS_RAW_SESSION_H_

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "grpcpp/client_context.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld_test {

// Writes zeros over the first `bytes` of memfd `fd`, as libascendcl writes
// every page of the memory it shares (client/sealed_memfd.h): acld refuses
// memory with holes. True when all were written.
inline bool WriteEveryPage(int fd, uint64_t bytes) {
  static const std::string zeros(1 << 16, '\0');
  for (uint64_t offset = 0; offset < bytes;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(zeros.size(), bytes - offset));
    const ssize_t written = pwrite(fd, zeros.data(), chunk, static_cast<off_t>(offset));
    if (written <= 0) return false;
    offset += static_cast<uint64_t>(written);
  }
  return true;
}

// One request line on the identity socket at `path` (with `fd` attached
// unless -1); the answer line without its newline ("connect failed" when
// nothing listens there).
std::string AskDesk(const std::string& path, const std::string& request, int fd = -1,
                    int second_fd = -1);

// A one-time identity token from the identity socket (`<socket>.peer`).
std::string FetchToken(const std::string& peer_socket_path);

// One Session stream on its own connection, opened with a valid Hello.
class RawSession {
 public:
  // Connects to the runtime socket `socket` and says Hello (and reads the
  // answer unless `read_hello_reply` is false: a session that must not read)
  // with a token of the identity socket `token_desk` (default: the socket's
  // own, `<socket>.peer`), or with `token` as it is.
  explicit RawSession(const std::string& socket, bool read_hello_reply = true,
                      const std::string& token_desk = "", const std::string& token = "");
  ~RawSession();  // cancels the stream

  bool opened() const { return opened_; }
  // Why the stream ended, when it was not opened (acld's refusal).
  const std::string& refusal() const { return refusal_; }
  const std::string& desk() const { return desk_; }

  // Sends `message` with the next call id and returns that id (0 when the
  // stream is broken), without waiting for the reply.
  uint64_t Send(acl::v1::ClientMessage message);
  // The next Reply (events skipped); false when the stream ended.
  bool NextReply(acl::v1::ServerMessage* reply);
  // Sends `message` and waits for its reply (acl_error -1: the stream ended).
  acl::v1::Reply Call(acl::v1::ClientMessage message);
  // Hands `fd` (a memfd) to the daemon for a ticket and registers it in this
  // session as `size` bytes; the registration's reply.
  acl::v1::Reply Share(int fd, uint64_t size);

 private:
  const std::string desk_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>>
      stream_;
  uint64_t next_call_id_ = 1;
  bool opened_ = false;
  bool finished_ = false;  // Finish() was called (once only)
  std::string refusal_;
};

}  // namespace acld_test

#endif  // ACLD_TESTS_RAW_SESSION_H_
