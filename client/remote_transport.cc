#include "client/remote_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/peer_token.h"
#include "client/process_info.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace acl_client {
namespace {

using acl::v1::AsyncOp;
using acl::v1::ClientMessage;
using acl::v1::Reply;
using acl::v1::ServerMessage;
using Direction = acld::CopyDirection;

constexpr char kHowToFix[] =
    "start acld (bazel-bin/daemon/acld --socket=<path>), or set ACLD_ADDRESS=unix:<path> to "
    "its socket, or ACLD_ADDRESS=embedded to run the runtime in this process";

// Copies up to this size travel inside the message; larger ones use shared memory.
constexpr uint64_t kInlineBytes = 64 << 10;
// Bulk copies move in chunks so that the client's and the daemon's memcpy overlap.
constexpr uint64_t kChunkBytes = 4 << 20;
constexpr uint64_t kStagingBytes = 64 << 20;
constexpr uint64_t kStagingSlots = kStagingBytes / kChunkBytes;
// A reply carries at most this much of a device-to-host copy into pageable memory.
constexpr uint64_t kReplyChunkBytes = acld::kMaxReplyCopyBytes;
// The writer sends the batch when either limit is reached (or when it is idle).
constexpr int kMaxBatchOps = 1024;
constexpr size_t kMaxBatchBytes = 4 << 20;

absl::Status Unreachable(const std::string& socket_path, absl::string_view why) {
  return acld::AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE,
      absl::StrCat("cannot reach acld at unix:", socket_path, ": ", why, "; ", kHowToFix));
}

constexpr absl::Duration kConnectTimeout = absl::Seconds(3);

acl::v1::CopyRequest::Direction ToProto(Direction direction) {
  switch (direction) {
    case Direction::kHostToDevice:
      return acl::v1::CopyRequest::HOST_TO_DEVICE;
    case Direction::kDeviceToHost:
      return acl::v1::CopyRequest::DEVICE_TO_HOST;
    case Direction::kDeviceToDevice:
      return acl::v1::CopyRequest::DEVICE_TO_DEVICE;
  }
  return acl::v1::CopyRequest::DEVICE_TO_DEVICE;
}

// An asynchronous operation on `stream`, submitted by `thread`.
AsyncOp OpOn(uint64_t stream, uint64_t thread) {
  AsyncOp op;
  op.set_stream(stream);
  op.set_thread(thread);
  return op;
}

void SetMemset(const acld::MemsetRequest& memset, acl::v1::MemsetRequest& proto) {
  proto.set_device_dst(memset.device_dst);
  proto.set_max_count(memset.max_count);
  proto.set_value(memset.value);
  proto.set_count(memset.count);
}

acl::v1::CopyRequest CopyProto(const HostCopy& copy, uint64_t offset, uint64_t count) {
  acl::v1::CopyRequest proto;
  proto.set_direction(ToProto(copy.direction));
  if (copy.direction != Direction::kDeviceToHost) proto.set_device_dst(copy.device_dst + offset);
  if (copy.direction != Direction::kHostToDevice) proto.set_device_src(copy.device_src + offset);
  proto.set_count(count);
  return proto;
}

}  // namespace

RemoteTransport::RemoteTransport(std::string socket_path, CallbackDispatcher* callbacks)
    : socket_path_(std::move(socket_path)), callbacks_(callbacks) {}

absl::StatusOr<std::unique_ptr<RemoteTransport>> RemoteTransport::Connect(
    const std::string& socket_path, CallbackDispatcher* callbacks) {
  // A missing socket file is the common case ("acld is not running"): say so
  // without waiting for gRPC's connection attempts.
  struct stat info {};
  if (stat(socket_path.c_str(), &info) != 0) {
    return Unreachable(socket_path, std::strerror(errno));
  }
  std::unique_ptr<RemoteTransport> transport(new RemoteTransport(socket_path, callbacks));
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(acld::kMaxMessageBytes);
  transport->channel_ = grpc::CreateCustomChannel("unix:" + socket_path,
                                                  grpc::InsecureChannelCredentials(), arguments);
  if (!transport->channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + kConnectTimeout))) {
    return Unreachable(socket_path, "nothing accepts connections there");
  }
  transport->stub_ = acl::v1::Runtime::NewStub(transport->channel_);
  transport->stream_ = transport->stub_->Session(&transport->context_);
  transport->reader_ = std::thread([t = transport.get()] { t->ReadReplies(); });
  transport->flusher_ = std::thread([t = transport.get()] { t->FlushLoop(); });

  absl::StatusOr<std::string> token = FetchPeerToken(acld::PeerSocketPath(socket_path), kConnectTimeout);
  if (!token.ok()) return Unreachable(socket_path, token.status().message());
  ClientMessage hello;
  hello.mutable_hello()->set_peer_token(*token);
  hello.mutable_hello()->set_protocol_version(acld::kProtocolVersion);
  hello.mutable_hello()->set_pid(getpid());
  hello.mutable_hello()->set_uid(getuid());
  hello.mutable_hello()->set_command(ProcessCommandLine());
  absl::StatusOr<Reply> opened = transport->Call(std::move(hello), kConnectTimeout);
  if (!opened.ok()) {
    // Over one of acld's caps: say which (the daemon names it and its flag).
    if (acld::AclCodeOf(opened.status()) == ACL_ERROR_RT_OVER_LIMIT) return opened.status();
    return Unreachable(socket_path, opened.status().message());
  }
  const acl::v1::SessionOpened& session = opened->session_opened();
  transport->device_count_ = static_cast<int32_t>(session.device_count());
  transport->soc_name_ = session.soc_name();
  for (const acl::v1::KernelSignature& kernel : session.kernels()) {
    transport->kernels_.emplace_back(kernel.name(), kernel.arg_count());
  }
  for (const acl::v1::AddressRange& window : session.device_addresses()) {
    transport->device_addresses_.push_back(acld::AddressRange{window.begin(), window.end()});
  }
  return transport;
}

RemoteTransport::~RemoteTransport() {
  // The reader thread took the stream's final status (Finish) before it ended.
  Close();
}

void RemoteTransport::Close() {
  {
    absl::MutexLock lock(&batch_mu_);
    stopping_ = true;
  }
  context_.TryCancel();
  absl::MutexLock lock(&close_mu_);
  if (flusher_.joinable()) flusher_.join();
  if (reader_.joinable()) reader_.join();
}

absl::Status RemoteTransport::BrokenStatus() const {
  if (!ended_reason_.empty()) {
    return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                           absl::StrCat("acld at unix:", socket_path_,
                                        " ended this process's session: ", ended_reason_,
                                        "; restart the application to open a new one"));
  }
  const grpc::StatusCode code = end_status_.error_code();
  const std::string& message = end_status_.error_message();
  if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // Refused (or ended) over one of acld's caps; the daemon's message names it.
    return acld::AclStatus(
        ACL_ERROR_RT_OVER_LIMIT,
        absl::StrCat("acld at unix:", socket_path_, " refused this process's session: ",
                     message.empty() ? "over a limit" : message));
  }
  // Statuses acld itself returns: the refusal (identity, protocol) or the shutdown.
  const bool from_acld =
      code == grpc::StatusCode::PERMISSION_DENIED ||
      code == grpc::StatusCode::FAILED_PRECONDITION || code == grpc::StatusCode::INVALID_ARGUMENT ||
      (code == grpc::StatusCode::UNAVAILABLE && message.find("shutting down") != std::string::npos);
  if (from_acld && !message.empty()) {
    return acld::AclStatus(
        ACL_ERROR_RT_SOCKET_CLOSE,
        absl::StrCat("acld at unix:", socket_path_, " ended this process's session: ", message,
                     "; restart the application to open a new one"));
  }
  return acld::AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE,
      absl::StrCat("the connection to acld at unix:", socket_path_,
                   " was lost (the daemon stopped or crashed); this process's session is "
                   "gone, restart the application"));
}

void RemoteTransport::MarkBroken() {
  // A write failed: the stream is over, and the reader is about to learn why
  // (its Read fails, Finish gives the status). Waiting for it a moment lets
  // callers see the real reason instead of "lost".
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&broken_), absl::Seconds(1));
  broken_ = true;
  pending_.clear();
}

void RemoteTransport::ReadReplies() {
  ServerMessage message;
  while (stream_->Read(&message)) {
    if (message.has_callback_due()) {
      callbacks_->OnCallbackDue(message.callback_due().callback_id(),
                                message.callback_due().stream());
      continue;
    }
    if (message.has_session_ended()) {
      absl::MutexLock lock(&mu_);
      ended_reason_ = message.session_ended().reason();
      continue;
    }
    if (message.has_task_failed()) {
      const acl::v1::TaskFailed& failed = message.task_failed();
      callbacks_->OnTaskFailed(FactsOf(failed.task_id(), failed.stream(), failed.thread(),
                                       failed.device_id(), failed.acl_error()));
      continue;
    }
    if (!message.has_reply()) continue;
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(message.call_id());
    if (it == pending_.end()) continue;  // the caller gave up (timeout)
    it->second->reply = std::move(*message.mutable_reply());
    it->second->done = true;
    pending_.erase(it);
  }
  // The stream is over: its status says why (refused over a cap, shut down, lost).
  grpc::Status status = stream_->Finish();
  absl::MutexLock lock(&mu_);
  end_status_ = std::move(status);
  broken_ = true;
  pending_.clear();
}

// --- writing: calls and batched asynchronous operations, in order ---

bool RemoteTransport::WriteBatchLocked(const ClientMessage* then) {
  ClientMessage batch;
  {
    absl::MutexLock lock(&batch_mu_);
    if (batch_.async_batch().ops_size() > 0) {
      batch.Swap(&batch_);
      batch_bytes_ = 0;
    }
  }
  bool written = true;
  if (batch.async_batch().ops_size() > 0) written = stream_->Write(batch);
  if (written && then != nullptr) written = stream_->Write(*then);
  if (!written) MarkBroken();
  return written;
}

void RemoteTransport::FlushLoop() {
  while (true) {
    {
      absl::MutexLock lock(&batch_mu_);
      batch_mu_.Await(absl::Condition(
          +[](RemoteTransport* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->batch_mu_) {
            return t->stopping_ || t->batch_.async_batch().ops_size() > 0;
          },
          this));
      if (stopping_) return;
    }
    absl::MutexLock lock(&write_mu_);
    WriteBatchLocked(nullptr);
  }
}

uint64_t RemoteTransport::TakeTaskId(uint64_t stream) {
  absl::MutexLock lock(&batch_mu_);
  return ++task_ids_[stream];
}

uint64_t RemoteTransport::Submit(AsyncOp op, size_t payload_bytes) {
  bool full;
  uint64_t task_id;
  {
    absl::MutexLock lock(&batch_mu_);
    task_id = ++task_ids_[op.stream()];
    *batch_.mutable_async_batch()->add_ops() = std::move(op);
    batch_bytes_ += payload_bytes;
    full = batch_.async_batch().ops_size() >= kMaxBatchOps || batch_bytes_ >= kMaxBatchBytes;
  }
  if (full) {
    // Applies back-pressure: the submitting thread writes the batch itself.
    absl::MutexLock lock(&write_mu_);
    WriteBatchLocked(nullptr);
  }
  return task_id;
}

std::shared_ptr<RemoteTransport::PendingCall> RemoteTransport::Start(ClientMessage request) {
  auto call = std::make_shared<PendingCall>();
  const uint64_t call_id = next_call_id_.fetch_add(1, std::memory_order_relaxed);
  request.set_call_id(call_id);
  {
    absl::MutexLock lock(&mu_);
    if (broken_) return call;  // Finish reports the broken connection
    pending_[call_id] = call;
  }
  absl::MutexLock lock(&write_mu_);
  WriteBatchLocked(&request);
  return call;
}

absl::StatusOr<Reply> RemoteTransport::Finish(const std::shared_ptr<PendingCall>& call,
                                              absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto finished = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return call->done || broken_; };
  mu_.AwaitWithTimeout(absl::Condition(&finished), timeout);
  if (!call->done) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second == call) {
        pending_.erase(it);
        break;
      }
    }
    if (broken_) return BrokenStatus();
    return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "acld did not answer in time");
  }
  if (call->reply.acl_error() != 0) {
    return acld::AclStatus(call->reply.acl_error(), call->reply.error_message());
  }
  return std::move(call->reply);
}

absl::StatusOr<Reply> RemoteTransport::Call(ClientMessage request, absl::Duration timeout) {
  return Finish(Start(std::move(request)), timeout);
}

absl::Status RemoteTransport::CallStatus(ClientMessage request) {
  return Call(std::move(request)).status();
}

absl::StatusOr<uint64_t> RemoteTransport::CallForInitCount(ClientMessage request) {
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->init_count().count();
}

absl::StatusOr<uint64_t> RemoteTransport::CallForHandle(ClientMessage request) {
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->handle().handle();
}

absl::StatusOr<acld::ContextInfo> RemoteTransport::CallForContext(ClientMessage request) {
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return acld::ContextInfo{reply->context().context(), reply->context().device_id(),
                           reply->context().default_stream()};
}

// --- lifecycle ---

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
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::AbortInit() {
  ClientMessage request;
  request.mutable_abort_init();
  return CallStatus(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::DropInitReference() {
  ClientMessage request;
  request.mutable_drop_init_reference();
  return CallForInitCount(std::move(request));
}

absl::Status RemoteTransport::Finalize() {
  ClientMessage request;
  request.mutable_finalize();
  return CallStatus(std::move(request));
}

// --- devices, contexts, streams, events ---

absl::StatusOr<acld::ContextInfo> RemoteTransport::SetDevice(int32_t device_id) {
  ClientMessage request;
  request.mutable_set_device()->set_device_id(device_id);
  return CallForContext(std::move(request));
}

absl::Status RemoteTransport::ResetDevice(int32_t device_id, bool force) {
  ClientMessage request;
  request.mutable_reset_device()->set_device_id(device_id);
  request.mutable_reset_device()->set_force(force);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::SynchronizeDevice(int32_t device_id, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_device()->set_device_id(device_id);
  request.mutable_synchronize_device()->set_timeout_ms(timeout_ms);
  return CallStatus(std::move(request));
}

absl::StatusOr<acld::ContextInfo> RemoteTransport::CreateContext(int32_t device_id) {
  ClientMessage request;
  request.mutable_create_context()->set_device_id(device_id);
  return CallForContext(std::move(request));
}

absl::Status RemoteTransport::DestroyContext(uint64_t context) {
  ClientMessage request;
  request.mutable_destroy_context()->set_context(context);
  return CallStatus(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::CreateStream(uint64_t context, uint32_t priority,
                                                       uint32_t flags) {
  ClientMessage request;
  request.mutable_create_stream()->set_context(context);
  request.mutable_create_stream()->set_priority(priority);
  request.mutable_create_stream()->set_flags(flags);
  return CallForHandle(std::move(request));
}

absl::Status RemoteTransport::DestroyStream(uint64_t stream, bool force) {
  ClientMessage request;
  request.mutable_destroy_stream()->set_stream(stream);
  request.mutable_destroy_stream()->set_force(force);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::SynchronizeStream(uint64_t stream, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_stream()->set_stream(stream);
  request.mutable_synchronize_stream()->set_timeout_ms(timeout_ms);
  return CallStatus(std::move(request));
}

absl::StatusOr<bool> RemoteTransport::StreamIdle(uint64_t stream) {
  ClientMessage request;
  request.mutable_stream_query()->set_stream(stream);
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->stream_query().complete();
}

absl::Status RemoteTransport::AbortStream(uint64_t stream) {
  ClientMessage request;
  request.mutable_abort_stream()->set_stream(stream);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::SetStreamFailureMode(uint64_t stream, uint64_t mode) {
  ClientMessage request;
  request.mutable_set_stream_failure_mode()->set_stream(stream);
  request.mutable_set_stream_failure_mode()->set_mode(mode);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::SetStreamAllocator(uint64_t stream, bool registered) {
  ClientMessage request;
  request.mutable_set_stream_allocator()->set_stream(stream);
  request.mutable_set_stream_allocator()->set_registered(registered);
  return CallStatus(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchKernel(uint64_t stream, uint64_t thread,
                                                       const acld::KernelRequest& kernel) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::LaunchKernel& launch = *op.mutable_launch_kernel();
  launch.set_name(kernel.name);
  launch.set_block_dim(kernel.block_dim);
  launch.mutable_args()->Add(kernel.args.begin(), kernel.args.end());
  return Submit(std::move(op));
}

absl::StatusOr<uint64_t> RemoteTransport::LoadBinary(int32_t device_id,
                                                     absl::string_view binary) {
  ClientMessage request;
  acl::v1::LoadBinaryRequest& load = *request.mutable_load_binary();
  load.set_device_id(device_id);
  load.set_size(binary.size());
  if (binary.size() <= kInlineBytes) {
    load.set_inline_data(binary.data(), binary.size());
    return CallForHandle(std::move(request));
  }
  // A large binary goes through shared memory of its own, gone after the call.
  ACL_ASSIGN_OR_RETURN(void* shared, MallocHost(binary.size()));
  std::memcpy(shared, binary.data(), binary.size());
  std::optional<HostBlocks::Location> location = host_blocks_.Find(shared, binary.size());
  load.mutable_shared()->set_segment(location->tag);
  load.mutable_shared()->set_offset(location->offset);
  absl::StatusOr<uint64_t> handle = CallForHandle(std::move(request));
  absl::Status freed = FreeHost(shared);
  if (handle.ok() && !freed.ok()) return freed;
  return handle;
}

absl::Status RemoteTransport::UnloadBinary(uint64_t binary) {
  ClientMessage request;
  request.mutable_unload_binary()->set_binary(binary);
  return CallStatus(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::GetFunction(uint64_t binary, const std::string& name) {
  ClientMessage request;
  request.mutable_get_function()->set_binary(binary);
  request.mutable_get_function()->set_name(name);
  return CallForHandle(std::move(request));
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchFunction(uint64_t stream, uint64_t thread,
                                                         const acld::FunctionLaunch& launch) {
  AsyncOp op = OpOn(stream, thread);
  acl::v1::LaunchFunction& proto = *op.mutable_launch_function();
  proto.set_function(launch.function);
  proto.set_block_dim(launch.block_dim);
  proto.set_args(launch.args);
  proto.set_args_address(launch.args_address);
  proto.set_args_size(launch.args_size);
  for (const acld::Placeholder& placeholder : launch.placeholders) {
    acl::v1::Placeholder& slot = *proto.add_placeholders();
    slot.set_offset(placeholder.offset);
    slot.set_data(placeholder.data);
  }
  return Submit(std::move(op), launch.args.size());
}

absl::StatusOr<uint64_t> RemoteTransport::MemsetAsync(uint64_t stream, uint64_t thread,
                                                      const acld::MemsetRequest& memset) {
  AsyncOp op = OpOn(stream, thread);
  SetMemset(memset, *op.mutable_memset());
  return Submit(std::move(op));
}

absl::StatusOr<uint64_t> RemoteTransport::RecordEvent(uint64_t event, uint64_t stream,
                                                      uint64_t thread) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_record_event()->set_event(event);
  return Submit(std::move(op));
}

absl::StatusOr<uint64_t> RemoteTransport::ResetEvent(uint64_t event, uint64_t stream,
                                                     uint64_t thread) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_reset_event()->set_event(event);
  return Submit(std::move(op));
}

absl::StatusOr<uint64_t> RemoteTransport::StreamWaitEvent(uint64_t stream, uint64_t event,
                                                          uint64_t thread) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_wait_event()->set_event(event);
  return Submit(std::move(op));
}

absl::StatusOr<uint64_t> RemoteTransport::CreateEvent(int32_t device_id, uint32_t flags) {
  ClientMessage request;
  request.mutable_create_event()->set_device_id(device_id);
  request.mutable_create_event()->set_flags(flags);
  return CallForHandle(std::move(request));
}

absl::Status RemoteTransport::DestroyEvent(uint64_t event) {
  ClientMessage request;
  request.mutable_destroy_event()->set_event(event);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::SynchronizeEvent(uint64_t event, int32_t timeout_ms) {
  ClientMessage request;
  request.mutable_synchronize_event()->set_event(event);
  request.mutable_synchronize_event()->set_timeout_ms(timeout_ms);
  return CallStatus(std::move(request));
}

absl::StatusOr<acld::EventStatus> RemoteTransport::QueryEvent(uint64_t event) {
  ClientMessage request;
  request.mutable_query_event()->set_event(event);
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return acld::EventStatus{reply->event_status().complete(),
                           reply->event_status().recorded_and_complete()};
}

absl::StatusOr<float> RemoteTransport::EventElapsedMs(uint64_t start, uint64_t end) {
  ClientMessage request;
  request.mutable_event_elapsed_time()->set_start(start);
  request.mutable_event_elapsed_time()->set_end(end);
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->elapsed_time().milliseconds();
}

// --- memory ---

absl::StatusOr<uint64_t> RemoteTransport::Malloc(int32_t device_id, uint64_t size) {
  ClientMessage request;
  request.mutable_malloc()->set_device_id(device_id);
  request.mutable_malloc()->set_size(size);
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->device_address().address();
}

absl::Status RemoteTransport::Free(uint64_t address) {
  ClientMessage request;
  request.mutable_free()->set_address(address);
  return CallStatus(std::move(request));
}

absl::Status RemoteTransport::Memset(const acld::MemsetRequest& memset) {
  ClientMessage request;
  SetMemset(memset, *request.mutable_memset());
  return CallStatus(std::move(request));
}

absl::StatusOr<acld::MemInfo> RemoteTransport::GetMemInfo(int32_t device_id) {
  ClientMessage request;
  request.mutable_get_mem_info()->set_device_id(device_id);
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  return acld::MemInfo{reply->mem_info().free(), reply->mem_info().total()};
}

bool RemoteTransport::SetSharedHost(const HostCopy& copy, acl::v1::CopyRequest& proto) const {
  const void* host = copy.direction == Direction::kHostToDevice ? copy.host_src : copy.host_dst;
  std::optional<HostBlocks::Location> location = host_blocks_.Find(host, copy.count);
  if (!location.has_value()) return false;
  proto.mutable_shared()->set_segment(location->tag);
  proto.mutable_shared()->set_offset(location->offset);
  return true;
}

absl::Status RemoteTransport::Copy(const HostCopy& copy) {
  ClientMessage request;
  *request.mutable_copy() = CopyProto(copy, 0, copy.count);
  if (copy.direction == Direction::kDeviceToDevice ||
      SetSharedHost(copy, *request.mutable_copy())) {
    return CallStatus(std::move(request));
  }
  if (copy.count > kInlineBytes) {
    return copy.direction == Direction::kHostToDevice ? StagedCopyToDevice(copy)
                                                      : StagedCopyToHost(copy);
  }
  if (copy.direction == Direction::kHostToDevice) {
    request.mutable_copy()->set_inline_data(copy.host_src, copy.count);
    return CallStatus(std::move(request));
  }
  absl::StatusOr<Reply> reply = Call(std::move(request));
  if (!reply.ok()) return reply.status();
  std::memcpy(copy.host_dst, reply->data().data(),
              std::min<size_t>(reply->data().size(), copy.count));
  return absl::OkStatus();
}

absl::Status RemoteTransport::StagedCopyToDevice(const HostCopy& copy) {
  absl::MutexLock lock(&staging_mu_);
  absl::Status ready = EnsureStaging();
  if (!ready.ok()) return ready;
  std::vector<std::shared_ptr<PendingCall>> in_flight(kStagingSlots);
  absl::Status result;
  auto finish = [&](std::shared_ptr<PendingCall>& call) {
    if (call == nullptr) return;
    absl::Status status = Finish(call).status();
    if (result.ok()) result = status;
    call = nullptr;
  };
  const auto* source = static_cast<const uint8_t*>(copy.host_src);
  for (uint64_t offset = 0, chunk = 0; offset < copy.count; offset += kChunkBytes, ++chunk) {
    const uint64_t slot = chunk % kStagingSlots;
    finish(in_flight[slot]);  // the slot is free once the daemon copied out of it
    const uint64_t bytes = std::min(kChunkBytes, copy.count - offset);
    std::memcpy(staging_.base + slot * kChunkBytes, source + offset, bytes);
    ClientMessage request;
    *request.mutable_copy() = CopyProto(copy, offset, bytes);
    request.mutable_copy()->mutable_shared()->set_segment(staging_.id);
    request.mutable_copy()->mutable_shared()->set_offset(slot * kChunkBytes);
    in_flight[slot] = Start(std::move(request));
  }
  for (auto& call : in_flight) finish(call);
  return result;
}

absl::Status RemoteTransport::StagedCopyToHost(const HostCopy& copy) {
  absl::MutexLock lock(&staging_mu_);
  absl::Status ready = EnsureStaging();
  if (!ready.ok()) return ready;
  struct Chunk {
    std::shared_ptr<PendingCall> call;
    uint64_t offset, bytes, slot;
  };
  std::deque<Chunk> in_flight;
  absl::Status result;
  auto deliver = [&] {
    Chunk chunk = std::move(in_flight.front());
    in_flight.pop_front();
    absl::Status status = Finish(chunk.call).status();
    if (status.ok()) {
      std::memcpy(static_cast<uint8_t*>(copy.host_dst) + chunk.offset,
                  staging_.base + chunk.slot * kChunkBytes, chunk.bytes);
    } else if (result.ok()) {
      result = status;
    }
  };
  for (uint64_t offset = 0, chunk = 0; offset < copy.count; offset += kChunkBytes, ++chunk) {
    if (in_flight.size() == kStagingSlots) deliver();
    const uint64_t slot = chunk % kStagingSlots;
    const uint64_t bytes = std::min(kChunkBytes, copy.count - offset);
    ClientMessage request;
    *request.mutable_copy() = CopyProto(copy, offset, bytes);
    request.mutable_copy()->mutable_shared()->set_segment(staging_.id);
    request.mutable_copy()->mutable_shared()->set_offset(slot * kChunkBytes);
    in_flight.push_back({Start(std::move(request)), offset, bytes, slot});
  }
  while (!in_flight.empty()) deliver();
  return result;
}

absl::StatusOr<uint64_t> RemoteTransport::CopyAsync(uint64_t stream, uint64_t thread,
                                                    const HostCopy& copy) {
  AsyncOp op = OpOn(stream, thread);
  *op.mutable_copy() = CopyProto(copy, 0, copy.count);
  if (copy.direction == Direction::kDeviceToDevice || SetSharedHost(copy, *op.mutable_copy())) {
    return Submit(std::move(op));
  }
  if (copy.direction == Direction::kHostToDevice) {
    // Pageable source: its bytes are taken now, in chunks that ride the batch.
    const auto* source = static_cast<const uint8_t*>(copy.host_src);
    uint64_t task_id = 0;
    for (uint64_t offset = 0; offset < copy.count || offset == 0; offset += kChunkBytes) {
      const uint64_t bytes = std::min(kChunkBytes, copy.count - offset);
      AsyncOp chunk = OpOn(stream, thread);
      *chunk.mutable_copy() = CopyProto(copy, offset, bytes);
      chunk.mutable_copy()->set_inline_data(source + offset, bytes);
      task_id = Submit(std::move(chunk), bytes);
      if (copy.count == 0) break;
    }
    return task_id;
  }
  // Pageable destination: the daemon cannot write it, so wait until the stream
  // reaches the copy and take the bytes from the reply.
  uint64_t task_id = 0;
  for (uint64_t offset = 0; offset < copy.count; offset += kReplyChunkBytes) {
    const uint64_t bytes = std::min(kReplyChunkBytes, copy.count - offset);
    ClientMessage request;
    acl::v1::CopyAsync& to_client = *request.mutable_copy_to_client();
    *to_client.mutable_copy() = CopyProto(copy, offset, bytes);
    to_client.set_stream(stream);
    to_client.set_thread(thread);
    task_id = TakeTaskId(stream);
    absl::StatusOr<Reply> reply = Call(std::move(request));
    if (!reply.ok()) return reply.status();
    if (reply->data().size() == bytes) {
      std::memcpy(static_cast<uint8_t*>(copy.host_dst) + offset, reply->data().data(), bytes);
    }
  }
  return task_id;
}

absl::StatusOr<uint64_t> RemoteTransport::LaunchCallback(uint64_t stream, uint64_t thread,
                                                         uint64_t callback_id, bool block) {
  AsyncOp op = OpOn(stream, thread);
  op.mutable_host_callback()->set_callback_id(callback_id);
  op.mutable_host_callback()->set_block(block);
  return Submit(std::move(op));
}

void RemoteTransport::AcknowledgeCallback(uint64_t callback_id) {
  ClientMessage done;
  done.mutable_callback_done()->set_callback_id(callback_id);
  // After everything the callback itself submitted, so its work comes first.
  absl::MutexLock lock(&write_mu_);
  WriteBatchLocked(&done);
}

// --- shared memory ---

absl::StatusOr<RemoteTransport::Segment> RemoteTransport::CreateSegment(uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size = (std::max<uint64_t>(size, 1) + page - 1) / page * page;
  auto failed = [size](absl::string_view why) {
    return acld::AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                           absl::StrCat("cannot create ", size, " bytes of shared memory: ", why));
  };
  // A memfd, not a named object: it needs no shared /dev/shm (containers),
  // nobody else can open it, and sealed against shrinking it can never fault
  // under acld's mapping.
  const int fd = memfd_create("acld-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return failed(absl::StrCat("memfd_create: ", std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return failed(absl::StrCat("cannot size and seal it: ", error));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string error = std::strerror(errno);
    close(fd);
    return failed(absl::StrCat("cannot map it: ", error));
  }
  // acld keeps its own reference; the mapping keeps this process's.
  absl::StatusOr<std::string> ticket =
      SendSharedMemory(acld::PeerSocketPath(socket_path_), fd, size, kConnectTimeout);
  close(fd);
  if (!ticket.ok()) {
    munmap(base, size);
    return failed(ticket.status().message());
  }
  ClientMessage request;
  request.mutable_register_shared_memory()->set_ticket(*ticket);
  request.mutable_register_shared_memory()->set_size(size);
  absl::StatusOr<uint64_t> id = CallForHandle(std::move(request));
  if (!id.ok()) {
    munmap(base, size);
    return id.status();
  }
  return Segment{static_cast<uint8_t*>(base), size, *id};
}

void RemoteTransport::DestroySegment(const Segment& segment) {
  ClientMessage request;
  request.mutable_unregister_shared_memory()->set_segment(segment.id);
  CallStatus(std::move(request)).IgnoreError();
  munmap(segment.base, segment.size);
}

absl::Status RemoteTransport::EnsureStaging() {
  if (staging_.base != nullptr) return absl::OkStatus();
  absl::StatusOr<Segment> segment = CreateSegment(kStagingBytes);
  if (!segment.ok()) return segment.status();
  staging_ = *segment;
  return absl::OkStatus();
}

absl::StatusOr<void*> RemoteTransport::MallocHost(uint64_t size) {
  absl::StatusOr<Segment> segment = CreateSegment(size);
  if (!segment.ok()) return segment.status();
  host_blocks_.Add(segment->base, {segment->size, segment->id});
  return static_cast<void*>(segment->base);
}

absl::Status RemoteTransport::FreeHost(void* pointer) {
  std::optional<HostBlocks::Block> block = host_blocks_.Remove(pointer);
  if (!block.has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "aclrtFreeHost: the pointer was not returned by aclrtMallocHost");
  }
  DestroySegment(Segment{static_cast<uint8_t*>(pointer), block->size, block->tag});
  return absl::OkStatus();
}

}  // namespace acl_client
