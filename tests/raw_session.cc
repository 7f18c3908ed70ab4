#include "tests/raw_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/acl/protocol.h"

namespace acld_test {

std::string AskDesk(const std::string& path, const std::string& request, int fd,
                    int second_fd) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int socket_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(socket_fd);
    return "connect failed";
  }
  iovec part{const_cast<char*>(request.data()), request.size()};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  const int fds[2] = {fd, second_fd};
  const size_t count = fd < 0 ? 0 : (second_fd < 0 ? 1 : 2);
  if (count > 0) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds, count * sizeof(int));
  }
  std::string answer;
  if (sendmsg(socket_fd, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buffer[128];
    pollfd readable{socket_fd, POLLIN, 0};
    while (answer.find('\n') == std::string::npos && poll(&readable, 1, 10000) > 0) {
      const ssize_t n = read(socket_fd, buffer, sizeof(buffer));
      if (n <= 0) break;
      answer.append(buffer, static_cast<size_t>(n));
    }
  }
  close(socket_fd);
  return answer.substr(0, answer.find('\n'));
}

std::string FetchToken(const std::string& peer_socket_path) {
  return AskDesk(peer_socket_path, "T\n");
}

RawSession::RawSession(const std::string& socket, bool read_hello_reply,
                       const std::string& token_desk, const std::string& token)
    : desk_(token_desk.empty() ? socket + ".peer" : token_desk) {
  // A connection of its own, as the class says: acld serves one session per
  // connection, and gRPC would otherwise share one between a process's
  // sessions (a second would wait for the first to end).
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  arguments.SetMaxReceiveMessageSize(acld::kMaxMessageBytes);  // replies of copied bytes
  channel_ = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(),
                                       arguments);
  stub_ = acl::v1::Runtime::NewStub(channel_);
  stream_ = stub_->Session(&context_);
  acl::v1::ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_peer_token(token.empty() ? FetchToken(desk_) : token);
  if (!read_hello_reply) {
    opened_ = Send(std::move(hello)) != 0;
    return;
  }
  opened_ = Call(std::move(hello)).has_session_opened();
  if (!opened_) {
    refusal_ = stream_->Finish().error_message();
    finished_ = true;
  }
}

RawSession::~RawSession() {
  context_.TryCancel();
  if (!finished_) (void)stream_->Finish();
}

uint64_t RawSession::Send(acl::v1::ClientMessage message) {
  message.set_call_id(next_call_id_++);
  return stream_->Write(message) ? message.call_id() : 0;
}

bool RawSession::NextReply(acl::v1::ServerMessage* reply) {
  while (stream_->Read(reply)) {
    if (reply->has_reply()) return true;
  }
  return false;
}

acl::v1::Reply RawSession::Call(acl::v1::ClientMessage message) {
  const uint64_t call_id = Send(std::move(message));
  acl::v1::ServerMessage answer;
  while (call_id != 0 && NextReply(&answer)) {
    if (answer.call_id() == call_id) return answer.reply();
  }
  acl::v1::Reply ended;
  ended.set_acl_error(-1);
  ended.set_error_message("the stream ended");
  return ended;
}

acl::v1::Reply RawSession::Share(int fd, uint64_t size) {
  acl::v1::ClientMessage message;
  message.mutable_register_shared_memory()->set_ticket(
      AskDesk(desk_, absl::StrCat("M ", size, "\n"), fd));
  message.mutable_register_shared_memory()->set_size(size);
  return Call(std::move(message));
}

}  // namespace acld_test
