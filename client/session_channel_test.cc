#include "client/session_channel.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/callback_dispatcher.h"
#include "client/session_codec.h"
#include "gtest/gtest.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/protocol.h"
#include "proto/acl/ring_channel.h"

namespace acl_client {
namespace {

// Plays acld's identity desk for one session request: takes the channel,
// reads what is in it before answering "O" (what the client wrote before it
// handed the channel over), answers the call with id `answer_call_id` (if
// not 0) on the channel, then "O", and keeps the connection until destroyed.
class OneSessionDesk {
 public:
  // Its socket is in a directory of its own under /tmp: a Unix socket's path
  // must be short, and the test's temporary directory can be too deep.
  explicit OneSessionDesk(uint64_t answer_call_id) {
    char pattern[] = "/tmp/session-channel-test-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return;
    dir_ = pattern;
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = acld::PeerSocketPath(runtime_socket());
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    bound_ = bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
             listen(listener_, 4) == 0;
    if (bound_) thread_ = std::thread([this, answer_call_id] { Serve(answer_call_id); });
  }
  ~OneSessionDesk() {
    if (thread_.joinable()) thread_.join();
    if (connection_ >= 0) close(connection_);
    if (listener_ >= 0) close(listener_);
    if (region_ != nullptr) munmap(region_, acld::RingChannel::RegionBytes());
    if (dir_.empty()) return;
    unlink(acld::PeerSocketPath(runtime_socket()).c_str());
    rmdir(dir_.c_str());
  }
  bool bound() const { return bound_; }
  // The runtime socket the client is given; the desk listens beside it.
  std::string runtime_socket() const { return dir_ + "/acld.sock"; }
  // What the channel held when the request came (after the desk thread ended).
  std::vector<acl::v1::ClientMessage> early() {
    if (thread_.joinable()) thread_.join();
    return early_;
  }

 private:
  void Serve(uint64_t answer_call_id) {
    connection_ = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection_ < 0) return;
    char line[128] = {};
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
    iovec part{line, sizeof(line) - 1};
    msghdr message{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    if (recvmsg(connection_, &message, 0) <= 0) return;
    int fds[2] = {-1, -1};
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    if (header == nullptr || header->cmsg_type != SCM_RIGHTS) return;
    std::memcpy(fds, CMSG_DATA(header), sizeof(fds));
    region_ = mmap(nullptr, acld::RingChannel::RegionBytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
                   fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    if (region_ == MAP_FAILED) {
      region_ = nullptr;
      return;
    }
    acld::RingChannel channel(region_, acld::RingChannel::Side::kDaemon);
    while (true) {
      absl::StatusOr<std::optional<std::string>> bytes = channel.TryReceive();
      if (!bytes.ok() || !bytes->has_value()) break;
      acl::v1::ClientMessage request;
      if (!request.ParseFromString(**bytes)) break;
      early_.push_back(std::move(request));
    }
    if (answer_call_id != 0) {
      acl::v1::ServerMessage reply;
      reply.set_call_id(answer_call_id);
      reply.mutable_reply();
      if (!channel.Send(reply.SerializeAsString(), [] { return true; }).ok()) return;
    }
    const std::string opened = absl::StrCat(acld::kPeerSessionOpened, "\n");
    (void)send(connection_, opened.data(), opened.size(), MSG_NOSIGNAL);
  }

  std::string dir_;
  int listener_ = -1;
  bool bound_ = false;
  int connection_ = -1;
  void* region_ = nullptr;
  std::vector<acl::v1::ClientMessage> early_;
  std::thread thread_;
};

// Opens a session at `desk` whose opening is what RemoteTransport's is:
// ClientFeatures, then an Initialize of `config`.
absl::StatusOr<std::unique_ptr<SessionChannel>> OpenInitializing(const OneSessionDesk& desk,
                                                                 CallbackDispatcher& callbacks,
                                                                 const std::string& config) {
  acld::InitSettings settings;
  settings.config_content = config;
  SessionChannel::Opening opening;
  opening.posts.push_back(codec::ClientFeatures());
  opening.call = codec::Initialize(settings);
  return SessionChannel::OpenDirect(desk.runtime_socket(), &callbacks, absl::Seconds(30),
                                    std::move(opening));
}

// The opening's messages are in the channel when acld first looks at it
// (before its "O"), in order, the call with the first id after
// SessionOpened's; and the call's answer reaches TakeOpeningCall's handle.
TEST(SessionChannelTest, TheOpeningIsInTheChannelBeforeAcldAnswers) {
  OneSessionDesk desk(acld::kSessionOpenedCallId + 1);
  ASSERT_TRUE(desk.bound());
  const std::string config = R"({"dump": {}})";
  CallbackDispatcher callbacks;
  absl::StatusOr<std::unique_ptr<SessionChannel>> channel =
      OpenInitializing(desk, callbacks, config);
  ASSERT_TRUE(channel.ok()) << channel.status();
  const std::vector<acl::v1::ClientMessage> early = desk.early();
  ASSERT_EQ(early.size(), 2u);
  EXPECT_TRUE(early[0].has_client_features());
  ASSERT_TRUE(early[1].has_initialize());
  EXPECT_EQ(early[1].call_id(), acld::kSessionOpenedCallId + 1);
  EXPECT_EQ(early[1].initialize().config_content(), config);
  std::shared_ptr<SessionChannel::PendingCall> call = (*channel)->TakeOpeningCall();
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE((*channel)->Finish(call, absl::Seconds(30)).ok());
  EXPECT_EQ((*channel)->TakeOpeningCall(), nullptr) << "taken twice";
  (*channel)->Close();
}

// A call larger than kMaxOpeningCallBytes is not sent with the opening (the
// caller sends it once the session is open); the posts still are.
TEST(SessionChannelTest, ALargeCallIsLeftToTheCaller) {
  OneSessionDesk desk(/*answer_call_id=*/0);
  ASSERT_TRUE(desk.bound());
  CallbackDispatcher callbacks;
  absl::StatusOr<std::unique_ptr<SessionChannel>> channel = OpenInitializing(
      desk, callbacks, std::string(SessionChannel::kMaxOpeningCallBytes + 1, ' '));
  ASSERT_TRUE(channel.ok()) << channel.status();
  const std::vector<acl::v1::ClientMessage> early = desk.early();
  ASSERT_EQ(early.size(), 1u);
  EXPECT_TRUE(early[0].has_client_features());
  EXPECT_EQ((*channel)->TakeOpeningCall(), nullptr);
  (*channel)->Close();
}

}  // namespace
}  // namespace acl_client
