#include "client/remote_transport.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/process_info.h"
#include "daemon/core/acl_status.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace acl_client {
namespace {

using acl::v1::ClientMessage;
using acl::v1::Reply;
using acl::v1::ServerMessage;

constexpr char kHowToFix[] =
    "start acld (bazel-bin/daemon/acld --socket=<path>), or set ACLD_ADDRESS=unix:<path> to "
    "its socket, or ACLD_ADDRESS=embedded to run the runtime in this process";

absl::Status Unreachable(const std::string& socket_path, absl::string_view why) {
  return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                         absl::StrCat("cannot reach acld at unix:", socket_path, ": ", why, "; ",
                                      kHowToFix));
}

absl::Duration ConnectTimeout() { return absl::Seconds(3); }

}  // namespace

RemoteTransport::RemoteTransport(std::string socket_path) : socket_path_(std::move(socket_path)) {}

absl::StatusOr<std::unique_ptr<RemoteTransport>> RemoteTransport::Connect(
    const std::string& socket_path) {
  // A missing socket file is the common case ("acld is not running"): say so
  // without waiting for gRPC's connection attempts.
  struct stat info {};
  if (stat(socket_path.c_str(), &info) != 0) {
    return Unreachable(socket_path, std::strerror(errno));
  }
  std::unique_ptr<RemoteTransport> transport(new RemoteTransport(socket_path));
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(64 << 20);
  transport->channel_ = grpc::CreateCustomChannel("unix:" + socket_path,
                                                  grpc::InsecureChannelCredentials(), arguments);
  if (!transport->channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + ConnectTimeout()))) {
    return Unreachable(socket_path, "nothing accepts connections there");
  }
  transport->stub_ = acl::v1::Runtime::NewStub(transport->channel_);
  transport->stream_ = transport->stub_->Session(&transport->context_);
  transport->reader_ = std::thread([t = transport.get()] { t->ReadReplies(); });

  ClientMessage hello;
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_pid(getpid());
  hello.mutable_hello()->set_uid(getuid());
  hello.mutable_hello()->set_command(ProcessCommandLine());
  absl::StatusOr<Reply> opened = transport->Call(std::move(hello), ConnectTimeout());
  if (!opened.ok()) return Unreachable(socket_path, opened.status().message());
  return transport;
}

RemoteTransport::~RemoteTransport() {
  Close();
  if (stream_) (void)stream_->Finish();
}

void RemoteTransport::Close() {
  context_.TryCancel();
  absl::MutexLock lock(&close_mu_);
  if (reader_.joinable()) reader_.join();
}

absl::Status RemoteTransport::BrokenStatus() const {
  return acld::AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE,
      absl::StrCat("the connection to acld at unix:", socket_path_,
                   " was lost (daemon stopped or session evicted); this process's session is "
                   "gone, restart the application"));
}

void RemoteTransport::ReadReplies() {
  ServerMessage message;
  while (stream_->Read(&message)) {
    if (!message.has_reply()) continue;
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(message.call_id());
    if (it == pending_.end()) continue;  // the caller gave up (timeout)
    it->second->reply = std::move(*message.mutable_reply());
    it->second->done = true;
    pending_.erase(it);
  }
  absl::MutexLock lock(&mu_);
  broken_ = true;
}

absl::StatusOr<Reply> RemoteTransport::Call(ClientMessage request, absl::Duration timeout) {
  PendingCall call;
  const uint64_t call_id = next_call_id_.fetch_add(1, std::memory_order_relaxed);
  request.set_call_id(call_id);
  {
    absl::MutexLock lock(&mu_);
    if (broken_) return BrokenStatus();
    pending_[call_id] = &call;
  }
  bool written;
  {
    absl::MutexLock lock(&write_mu_);
    written = stream_->Write(request);
  }
  absl::MutexLock lock(&mu_);
  if (!written) broken_ = true;
  auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return call.done || broken_; };
  mu_.AwaitWithTimeout(absl::Condition(&finished), timeout);
  if (!call.done) {
    pending_.erase(call_id);
    if (broken_) return BrokenStatus();
    return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "acld did not answer in time");
  }
  if (call.reply.acl_error() != 0) {
    return acld::AclStatus(call.reply.acl_error(), call.reply.error_message());
  }
  return std::move(call.reply);
}

absl::StatusOr<uint64_t> RemoteTransport::CallForInitCount(ClientMessage request) {
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->init_count().count();
}

absl::StatusOr<uint64_t> RemoteTransport::InitCount() {
  ClientMessage request;
  request.mutable_init_count();
  return CallForInitCount(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::AddInitReference() {
  ClientMessage request;
  request.mutable_add_init_reference();
  return CallForInitCount(std::move(request));
}

absl::Status RemoteTransport::Initialize(const acld::InitSettings& settings) {
  ClientMessage request;
  acl::v1::InitializeRequest& init = *request.mutable_initialize();
  init.set_config_content(settings.config_content);
  init.set_has_default_device(settings.default_device.has_value());
  init.set_default_device(settings.default_device.value_or(0));
  init.mutable_settings()->insert(settings.settings.begin(), settings.settings.end());
  return Call(std::move(request)).status();
}

absl::Status RemoteTransport::AbortInit() {
  ClientMessage request;
  request.mutable_abort_init();
  return Call(std::move(request)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::DropInitReference() {
  ClientMessage request;
  request.mutable_drop_init_reference();
  return CallForInitCount(std::move(request));
}

absl::Status RemoteTransport::Finalize() {
  ClientMessage request;
  request.mutable_finalize();
  return Call(std::move(request)).status();
}

absl::StatusOr<int32_t> RemoteTransport::DeviceCount() {
  int32_t cached = device_count_.load(std::memory_order_relaxed);
  if (cached >= 0) return cached;
  ClientMessage request;
  request.mutable_get_device_count();
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  cached = static_cast<int32_t>(reply->device_count().count());
  device_count_.store(cached, std::memory_order_relaxed);
  return cached;
}

absl::Status RemoteTransport::SetDevice(int32_t device_id) {
  ClientMessage request;
  request.mutable_set_device()->set_device_id(device_id);
  return Call(std::move(request)).status();
}

absl::Status RemoteTransport::ResetDevice(int32_t device_id, bool force) {
  ClientMessage request;
  request.mutable_reset_device()->set_device_id(device_id);
  request.mutable_reset_device()->set_force(force);
  return Call(std::move(request)).status();
}

}  // namespace acl_client
