// Malformed, truncated and random requests straight at acld's sockets and
// at its shared-memory channels: the daemon never crashes, answers what it
// can with an error, and serves a well-behaved client afterwards.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "daemon/server/socket_path.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/v1/admin.grpc.pb.h"
#include "proto/acl/v1/runtime.grpc.pb.h"
#include "tests/acld_fixture.h"
#include "tests/raw_session.h"
#include "tests/ring_session.h"

namespace acld_test {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Values that tend to break things.
class RandomValues {
 public:
  explicit RandomValues(uint64_t seed) : random_(seed) {}

  uint64_t U64() {
    static const uint64_t kEdges[] = {0,
                                      1,
                                      2,
                                      7,
                                      8,
                                      64,
                                      4096,
                                      0x7fffffff,
                                      0x80000000,
                                      0xffffffff,
                                      0x4000000000001000ull,
                                      1ull << 62,
                                      ~0ull,
                                      ~0ull - 1};
    return Chance(2) ? kEdges[random_() % (sizeof(kEdges) / sizeof(kEdges[0]))] : random_();
  }
  int64_t I64() {
    return Chance(3) ? -static_cast<int64_t>(random_() % 5) : static_cast<int64_t>(U64());
  }
  bool Chance(int one_in) { return random_() % one_in == 0; }
  size_t Below(size_t n) { return random_() % n; }
  std::string Bytes(size_t max) {
    std::string bytes(Below(max + 1), '\0');
    for (char& c : bytes) c = static_cast<char>(random_());
    return bytes;
  }
  // Random text: proto3 strings must be UTF-8 or the message does not parse
  // at all (the raw-byte cases below cover that).
  std::string Text(size_t max) {
    std::string text(Below(max + 1), ' ');
    for (char& c : text) c = static_cast<char>(' ' + random_() % 95);
    return text;
  }

 private:
  std::mt19937_64 random_;
};

// Fills every field of `message` with random values (nested up to `depth`).
void Randomize(Message& message, RandomValues& values, int depth) {
  const Reflection* r = message.GetReflection();
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    if (field->containing_oneof() != nullptr && !values.Chance(3)) continue;
    const int repeats = field->is_repeated() ? static_cast<int>(values.Below(4)) : 1;
    for (int i = 0; i < repeats; ++i) {
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: {
          const int32_t v = static_cast<int32_t>(values.I64());
          field->is_repeated() ? r->AddInt32(&message, field, v) : r->SetInt32(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_INT64: {
          const int64_t v = values.I64();
          field->is_repeated() ? r->AddInt64(&message, field, v) : r->SetInt64(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT32: {
          const uint32_t v = static_cast<uint32_t>(values.U64());
          field->is_repeated() ? r->AddUInt32(&message, field, v)
                               : r->SetUInt32(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_UINT64: {
          const uint64_t v = values.U64();
          field->is_repeated() ? r->AddUInt64(&message, field, v)
                               : r->SetUInt64(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_BOOL: {
          const bool v = values.Chance(2);
          field->is_repeated() ? r->AddBool(&message, field, v) : r->SetBool(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_FLOAT:
        case FieldDescriptor::CPPTYPE_DOUBLE:
          break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          const int v = static_cast<int>(values.I64() % 5);
          field->is_repeated() ? r->AddEnumValue(&message, field, v)
                               : r->SetEnumValue(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING: {
          std::string v = values.Chance(4) ? "add_one_u32" : values.Text(24);
          if (field->type() == FieldDescriptor::TYPE_BYTES) v = values.Bytes(64);
          if (field->name() == "name" && values.Chance(3)) v = "/acld-" + values.Text(8);
          field->is_repeated() ? r->AddString(&message, field, v)
                               : r->SetString(&message, field, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE:
          if (depth > 0) {
            Message* child = field->is_repeated() ? r->AddMessage(&message, field)
                                                  : r->MutableMessage(&message, field);
            Randomize(*child, values, depth - 1);
          }
          break;
      }
    }
  }
}

// Writes `bytes` to the Unix socket at `path` and closes it.
void SendRaw(const std::string& path, const std::string& bytes) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  close(fd);
}

bool WaitsForWork(const acl::v1::ClientMessage& message) {
  switch (message.body_case()) {
    case acl::v1::ClientMessage::kSynchronizeDevice:
    case acl::v1::ClientMessage::kSynchronizeStream:
    case acl::v1::ClientMessage::kSynchronizeEvent:
    case acl::v1::ClientMessage::kDestroyStream:
    case acl::v1::ClientMessage::kCopyToClient:
      return true;
    default:
      return false;
  }
}

// A random request with call id `1000 + index` (or none); noted in
// `must_answer` when acld must answer it promptly.
acl::v1::ClientMessage RandomCall(RandomValues& values, int index,
                                  std::set<uint64_t>& must_answer) {
  acl::v1::ClientMessage message;
  Randomize(message, values, 3);
  const uint64_t call_id = values.Chance(4) ? 0 : 1000 + index;
  message.set_call_id(call_id);
  if (call_id != 0 && message.body_case() != acl::v1::ClientMessage::kAsyncBatch &&
      message.body_case() != acl::v1::ClientMessage::kCallbackDone &&
      message.body_case() != acl::v1::ClientMessage::BODY_NOT_SET && !WaitsForWork(message)) {
    must_answer.insert(call_id);
  }
  return message;
}

size_t Missing(const std::set<uint64_t>& must_answer, const std::set<uint64_t>& answered) {
  size_t missing = 0;
  for (uint64_t id : must_answer) missing += answered.count(id) == 0 ? 1 : 0;
  return missing;
}

TEST(FuzzTest, RandomRequestsNeverCrashTheDaemon) {
  AcldDaemon daemon({"--sim_device_memory=67108864", "--callback_timeout=1"});
  RandomValues values(20261129);
  constexpr int kSessions = 6;
  constexpr int kMessagesPerSession = 1500;
  for (int s = 0; s < kSessions; ++s) {
    auto stub = acl::v1::Runtime::NewStub(
        grpc::CreateChannel("unix:" + daemon.socket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    auto stream = stub->Session(&context);
    acl::v1::ClientMessage hello;
    hello.set_call_id(1);
    hello.mutable_hello()->set_protocol_version(1);
    hello.mutable_hello()->set_peer_token(FetchToken(daemon.socket() + ".peer"));
    ASSERT_TRUE(stream->Write(hello));
    acl::v1::ServerMessage reply;
    ASSERT_TRUE(stream->Read(&reply));
    ASSERT_TRUE(reply.has_reply());

    // A reader collects replies while the writer sends random requests.
    absl::Mutex answered_mu;
    std::set<uint64_t> answered;
    std::thread reader([&] {
      acl::v1::ServerMessage message;
      while (stream->Read(&message)) {
        absl::MutexLock lock(&answered_mu);
        if (message.has_reply()) answered.insert(message.call_id());
      }
    });
    std::set<uint64_t> must_answer;
    for (int i = 0; i < kMessagesPerSession; ++i) {
      if (!stream->Write(RandomCall(values, i, must_answer))) break;
    }
    // Every call that does not wait for device work is answered.
    WaitUntil(
        [&] {
          absl::MutexLock lock(&answered_mu);
          return Missing(must_answer, answered) == 0;
        },
        absl::Seconds(60));
    context.TryCancel();
    reader.join();
    (void)stream->Finish();
    EXPECT_EQ(Missing(must_answer, answered), 0u)
        << "of " << must_answer.size() << " calls in session " << s;
    ASSERT_TRUE(acld::server::SocketIsLive(daemon.socket())) << "acld died";
  }

  // Garbage at every socket: no HTTP/2, truncated frames, random bytes.
  for (int i = 0; i < 50; ++i) {
    SendRaw(daemon.socket(), values.Bytes(512));
    SendRaw(daemon.admin_socket(), values.Bytes(512));
    SendRaw(daemon.socket() + ".peer", values.Bytes(64));
    // Session requests without their channel, or with numbers that mean nothing.
    SendRaw(daemon.socket() + ".peer",
            absl::StrCat("S ", values.U64(), " ", values.U64() % 8, "\n"));
    SendRaw(daemon.socket() + ".peer", "S " + values.Bytes(40) + "\n");
    SendRaw(daemon.socket(), std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + values.Bytes(64));
  }

  // Random admin requests.
  auto admin = acl::v1::Admin::NewStub(
      grpc::CreateChannel("unix:" + daemon.admin_socket(), grpc::InsecureChannelCredentials()));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext context;
    acl::v1::QuotaRequest quota;
    Randomize(quota, values, 1);
    quota.set_session(quota.session() % 16);
    acl::v1::QuotaReply quota_reply;
    admin->SetQuota(&context, quota, &quota_reply);
    grpc::ClientContext evict_context;
    acl::v1::EvictRequest evict;
    evict.set_session(values.U64());
    acl::v1::EvictReply evict_reply;
    admin->Evict(&evict_context, evict, &evict_reply);
  }
  grpc::ClientContext reset_context;
  acl::v1::QuotaRequest reset;
  reset.set_set_memory(true);
  reset.set_set_streams(true);
  acl::v1::QuotaReply reset_reply;
  ASSERT_TRUE(admin->SetQuota(&reset_context, reset, &reset_reply).ok());

  // Still alive, and a well-behaved client is served as usual.
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "seed_lifecycle"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;
  const auto [device_code, device_output] =
      RunToCompletion({"tests/device_client", "ordering"}, daemon.client_env());
  EXPECT_EQ(device_code, 0) << device_output;
  ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(10)));
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
  EXPECT_TRUE(daemon.AllDeviceMemoryFreed()) << daemon.DeviceBytesUsed();
  EXPECT_EQ(daemon.Stop(), 0);
}

// The same random requests over the shared-memory channel, then messages
// that do not parse and fragments that never end: a session that breaks the
// protocol ends, and nobody else notices.
TEST(FuzzTest, RandomMessagesOnTheChannelNeverCrashTheDaemon) {
  AcldDaemon daemon({"--sim_device_memory=67108864", "--callback_timeout=1"});
  RandomValues values(20261201);
  constexpr int kSessions = 4;
  constexpr int kMessagesPerSession = 1000;
  for (int s = 0; s < kSessions; ++s) {
    RingSession session(daemon.socket());
    ASSERT_TRUE(session.on_ring());
    std::set<uint64_t> must_answer;
    std::set<uint64_t> answered;
    for (int i = 0; i < kMessagesPerSession; ++i) {
      ASSERT_TRUE(session.Send(RandomCall(values, i, must_answer)))
          << "acld stopped reading session " << s;
      // Read as we go: acld serves a client that does not read no further.
      while (std::optional<acl::v1::ServerMessage> reply = session.Next(absl::ZeroDuration())) {
        if (reply->has_reply()) answered.insert(reply->call_id());
      }
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (absl::Now() < deadline && Missing(must_answer, answered) > 0) {
      std::optional<acl::v1::ServerMessage> reply = session.Next(absl::Milliseconds(100));
      if (reply.has_value() && reply->has_reply()) answered.insert(reply->call_id());
    }
    EXPECT_EQ(Missing(must_answer, answered), 0u)
        << "of " << must_answer.size() << " calls in session " << s;
    ASSERT_TRUE(acld::server::SocketIsLive(daemon.socket())) << "acld died";
  }

  // Bytes that are no message, and fragments that add up past the largest
  // message: each ends its own session, while a bystander stays served.
  RingSession bystander(daemon.socket());
  ASSERT_TRUE(bystander.on_ring());
  for (int round = 0; round < 20; ++round) {
    RingSession breaker(daemon.socket());
    ASSERT_TRUE(breaker.on_ring());
    std::string frame = values.Bytes(4096);
    if (round % 2 == 0) frame.insert(0, 1, static_cast<char>(acld::RingChannel::kLastFragment));
    (void)breaker.SendBytes(frame);
    EXPECT_EQ(bystander.InitCountOverRing(), 0) << "round " << round;
  }
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 1; }, absl::Seconds(10)))
      << "sessions that broke the protocol were not ended";
  EXPECT_EQ(bystander.InitCountOverRing(), 0);
}

}  // namespace
}  // namespace acld_test
