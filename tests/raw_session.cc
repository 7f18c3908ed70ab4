#include "tests/raw_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace acld_test {

std::string FetchToken(const std::string& peer_socket_path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, peer_socket_path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::string token;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      send(fd, "T\n", 2, MSG_NOSIGNAL) == 2) {
    char buffer[64];
    for (int waits = 0; waits < 50 && token.find('\n') == std::string::npos; ++waits) {
      pollfd readable{fd, POLLIN, 0};
      if (poll(&readable, 1, 100) <= 0) continue;
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n <= 0) break;
      token.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  return token.substr(0, token.find('\n'));
}

RawSession::RawSession(const std::string& socket, bool read_hello_reply) {
  channel_ = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  stub_ = acl::v1::Runtime::NewStub(channel_);
  stream_ = stub_->Session(&context_);
  acl::v1::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_peer_token(FetchToken(socket + ".peer"));
  if (!Send(std::move(hello), 1)) return;
  if (!read_hello_reply) {
    opened_ = true;
    return;
  }
  acl::v1::ServerMessage reply;
  opened_ = NextReply(&reply) && reply.reply().has_session_opened();
}

RawSession::~RawSession() {
  context_.TryCancel();
  (void)stream_->Finish();
}

bool RawSession::Send(acl::v1::ClientMessage message, uint64_t call_id) {
  message.set_call_id(call_id);
  return stream_->Write(message);
}

bool RawSession::NextReply(acl::v1::ServerMessage* reply) {
  while (stream_->Read(reply)) {
    if (reply->has_reply()) return true;
  }
  return false;
}

}  // namespace acld_test
