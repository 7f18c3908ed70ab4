#include "daemon/server/session_handler.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"
#include "daemon/server/log_limiter.h"

namespace acld::server {
namespace {

using acl::v1::ClientMessage;
using acl::v1::Reply;

absl::StatusOr<absl::Duration> Timeout(int32_t timeout_ms) {
  if (timeout_ms == -1) return absl::InfiniteDuration();
  if (timeout_ms < 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("timeout ", timeout_ms, " ms is invalid; use -1, 0 or > 0"));
  }
  return absl::Milliseconds(timeout_ms);
}

MemsetRequest ToMemset(const acl::v1::MemsetRequest& memset) {
  return {memset.device_dst(), memset.max_count(), memset.value(), memset.count()};
}

void SetContext(const ContextInfo& info, Reply& reply) {
  acl::v1::ContextInfo& context = *reply.mutable_context();
  context.set_context(info.context);
  context.set_device_id(info.device);
  context.set_default_stream(info.default_stream);
}

}  // namespace

void SessionHandler::Answer(uint64_t call_id, Reply reply) {
  absl::Status renumbered = renumbering_.ToSession(reply);
  if (!renumbered.ok()) {
    reply.Clear();
    reply.set_acl_error(AclCodeOf(renumbered));
    reply.set_error_message(std::string(renumbered.message()));
  }
  if (reply.acl_error() != 0) {
    SessionLog::For(session_)->Info("call failed with {}: {}", reply.acl_error(),
                                    reply.error_message());
  }
  if (call_id == 0) return;
  acl::v1::ServerMessage message;
  message.set_call_id(call_id);
  *message.mutable_reply() = std::move(reply);
  write_(message);
}

void SessionHandler::AnswerStatus(uint64_t call_id, const absl::Status& status) {
  Reply reply;
  reply.set_acl_error(AclCodeOf(status));
  if (!status.ok()) reply.set_error_message(std::string(status.message()));
  Answer(call_id, std::move(reply));
}

bool SessionHandler::AdmitWaiting(uint64_t call_id) {
  if (waiting_calls_.fetch_add(1) >= kMaxWaitingCalls) {
    waiting_calls_.fetch_sub(1);
    AnswerStatus(call_id,
                 AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                           absl::StrCat("this process already has ", kMaxWaitingCalls,
                                        " calls waiting in acld (one per waiting thread is "
                                        "usual); wait for some to finish")));
    return false;
  }
  if (tenant_waiting_ != nullptr && !tenant_waiting_->Take(tenant_)) {
    waiting_calls_.fetch_sub(1);
    AnswerStatus(call_id, AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                                    absl::StrCat("the processes of ", tenant_.ToString(),
                                                 " already have ", tenant_waiting_->per_tenant(),
                                                 " calls waiting in acld together; wait for "
                                                 "some to finish")));
    return false;
  }
  return true;
}

void SessionHandler::FinishWaiting() {
  waiting_calls_.fetch_sub(1);
  if (tenant_waiting_ != nullptr) tenant_waiting_->Give(tenant_);
}

Done SessionHandler::Later(uint64_t call_id) {
  if (!AdmitWaiting(call_id)) return nullptr;
  return AnswerWhenDone(call_id);
}

Done SessionHandler::AnswerWhenDone(uint64_t call_id) {
  // Weakly held: a wait may sit in another session's event until its record
  // settles, and a transfer in the pool until its slice runs; neither may
  // keep this session's handler, and the client memory it maps, after the
  // session ends (Close drops the transfers nobody waits for).
  return [weak = weak_from_this(), call_id](absl::Status status) {
    std::shared_ptr<SessionHandler> self = weak.lock();
    if (self == nullptr) return;
    self->FinishWaiting();
    self->AnswerStatus(call_id, status);
  };
}

void SessionHandler::RunSync(uint64_t call_id, absl::StatusOr<PiecewiseTransfer> transfer) {
  if (!transfer.ok()) return AnswerStatus(call_id, transfer.status());
  if (transfer->count() <= PiecewiseTransfer::kPieceBytes) {
    return AnswerStatus(call_id, transfer->RunFor(absl::InfiniteDuration()));
  }
  if (!AdmitWaiting(call_id)) return;
  sync_transfers_->Add(*std::move(transfer), AnswerWhenDone(call_id));
}

void SessionHandler::AnswerHandle(uint64_t call_id, const absl::StatusOr<uint64_t>& handle) {
  if (!handle.ok()) return AnswerStatus(call_id, handle.status());
  Reply reply;
  reply.mutable_handle()->set_handle(*handle);
  Answer(call_id, std::move(reply));
}

void SessionHandler::LoadBinary(uint64_t call_id, const acl::v1::LoadBinaryRequest& load) {
  // What a load needs once its bytes are ready; a copy of the binary is
  // taken only where the load runs.
  struct Load {
    int32_t device = 0;
    uint64_t bytes = 0;
    std::string inline_data;
    HostSpan shared;  // keeps the segment mapped until the copy is made
    std::unique_ptr<BinaryCharges::Held> held;
  };
  auto pending = std::make_shared<Load>();
  pending->device = load.device_id();
  pending->bytes = load.has_shared() ? load.size() : load.inline_data().size();
  // Charged before anything is copied: what waits for the long-call threads
  // is bounded by the tenant's binary bytes.
  absl::StatusOr<std::unique_ptr<BinaryCharges::Held>> reserved =
      runtime_.ReserveBinaryLoad(session_, pending->device, pending->bytes);
  if (!reserved.ok()) return AnswerStatus(call_id, reserved.status());
  pending->held = *std::move(reserved);
  if (load.has_shared()) {
    absl::StatusOr<HostSpan> span =
        shared_memory_.Resolve(load.shared().segment(), load.shared().offset(), load.size());
    if (!span.ok()) return AnswerStatus(call_id, span.status());
    pending->shared = *std::move(span);
  }
  auto run = [this](Load& load, absl::string_view inline_data) {
    // The process can still write its segment: the device parses a copy.
    const bool shared = load.shared.data != nullptr;
    const std::string copied =
        shared ? std::string(reinterpret_cast<const char*>(load.shared.data), load.bytes) : "";
    load.shared = HostSpan();
    return runtime_.LoadBinary(session_, load.device, shared ? copied : inline_data,
                               std::move(load.held));
  };
  if (pending->bytes <= kLongLoadBytes) {
    return AnswerHandle(call_id, run(*pending, load.inline_data()));
  }
  if (!AdmitWaiting(call_id)) return;
  if (!load.has_shared()) pending->inline_data = load.inline_data();
  run_long_([weak = weak_from_this(), call_id, pending, run] {
    std::shared_ptr<SessionHandler> self = weak.lock();
    if (self == nullptr || self->closed_.load()) return;
    absl::StatusOr<uint64_t> handle = run(*pending, pending->inline_data);
    self->FinishWaiting();
    self->AnswerHandle(call_id, handle);
  });
}

absl::Status SessionHandler::TakeDeferredError() {
  absl::MutexLock lock(&mu_);
  absl::Status error = std::move(deferred_error_);
  deferred_error_ = absl::OkStatus();
  return error;
}

void SessionHandler::Open(uint64_t call_id, bool on_ring) {
  // Events go out on the session's stream, weakly held: a session that ended
  // hears of nothing.
  std::weak_ptr<SessionHandler> weak = weak_from_this();
  SessionEvents events;
  events.callback_due = [weak](const CallbackDue& due) {
    auto self = weak.lock();
    if (!self) return;
    acl::v1::ServerMessage message;
    message.mutable_callback_due()->set_callback_id(due.callback_id);
    message.mutable_callback_due()->set_stream(due.stream);
    self->write_(message);
  };
  events.task_failed = [weak](const TaskFailure& failure) {
    auto self = weak.lock();
    if (!self) return;
    SessionLog::For(self->session_)
        ->Info("task {} of stream {} failed with {}: {}", failure.task_id, failure.stream,
               AclCodeOf(failure.status), std::string(failure.status.message()));
    acl::v1::ServerMessage message;
    acl::v1::TaskFailed& failed = *message.mutable_task_failed();
    failed.set_stream(failure.stream);
    failed.set_task_id(failure.task_id);
    failed.set_device_id(self->renumbering_.view().ToSession(failure.device).value_or(-1));
    failed.set_thread(failure.submitter_thread);
    failed.set_acl_error(AclCodeOf(failure.status));
    failed.set_message(std::string(failure.status.message()));
    if (failure.kernel_args.has_value()) {
      failed.set_kernel(true);
      failed.set_kernel_args(*failure.kernel_args);
      failed.set_function(failure.function_handle);
    }
    self->write_(message);
  };
  events.kernel_output = [weak](const KernelOutput& output) {
    auto self = weak.lock();
    if (!self) return;
    acl::v1::ServerMessage message;
    message.mutable_kernel_output()->set_stream(output.stream);
    message.mutable_kernel_output()->set_text(output.text);
    self->write_(message);
  };
  events.import_revoked = [weak](const ImportRevoked& revoked) {
    auto self = weak.lock();
    if (!self) return;
    acl::v1::ServerMessage message;
    message.mutable_import_revoked()->set_notice(revoked.notice);
    message.mutable_import_revoked()->set_reason(revoked.reason);
    self->write_(message);
  };
  runtime_.SetSessionEvents(session_, std::move(events));

  Reply reply;
  acl::v1::SessionOpened& opened = *reply.mutable_session_opened();
  opened.set_session_id(session_);
  const DeviceView& view = renumbering_.view();
  opened.set_device_count(view.count());
  opened.set_soc_name(runtime_.SocName());
  opened.set_ring(on_ring);
  for (const auto& [name, arg_count] : runtime_.Kernels()) {
    acl::v1::KernelSignature& kernel = *opened.add_kernels();
    kernel.set_name(name);
    kernel.set_arg_count(static_cast<uint32_t>(arg_count));
  }
  // The session's devices in its own order, and only the peers it sees.
  for (int32_t own = 0; own < view.count(); ++own) {
    const hal::DeviceFeatures features = runtime_.Features(view.ToHost(own).value());
    acl::v1::DeviceFeatures& out = *opened.add_device_features();
    for (int32_t attribute : features.cann_attributes) out.add_cann_attributes(attribute);
    for (int32_t capability : features.capabilities) out.add_capabilities(capability);
    out.mutable_device_info()->insert(features.device_info.begin(), features.device_info.end());
    for (int32_t peer : features.peers) {
      if (std::optional<int32_t> own_peer = view.ToSession(peer)) out.add_peers(*own_peer);
    }
    out.set_float_overflow(features.float_overflow);
    out.set_address_granularity(features.address_granularity);
  }
  const std::vector<hal::AddressRange> ranges = runtime_.DeviceAddressRanges();
  for (int32_t own = 0; own < view.count(); ++own) {
    const size_t host = static_cast<size_t>(view.ToHost(own).value());
    if (host >= ranges.size()) break;
    acl::v1::AddressRange& window = *opened.add_device_addresses();
    window.set_begin(ranges[host].begin);
    window.set_end(ranges[host].end);
  }
  Answer(call_id, std::move(reply));
}

absl::StatusOr<CopyRequest> SessionHandler::ToCopy(const acl::v1::CopyRequest& proto,
                                                   std::shared_ptr<std::string>* reply_data) {
  CopyRequest copy;
  copy.device_dst = proto.device_dst();
  copy.device_src = proto.device_src();
  copy.count = proto.count();
  switch (proto.direction()) {
    case acl::v1::CopyRequest::HOST_TO_DEVICE:
      copy.direction = CopyRequest::Direction::kHostToDevice;
      break;
    case acl::v1::CopyRequest::DEVICE_TO_HOST:
      copy.direction = CopyRequest::Direction::kDeviceToHost;
      break;
    case acl::v1::CopyRequest::DEVICE_TO_DEVICE:
      copy.direction = CopyRequest::Direction::kDeviceToDevice;
      return copy;
    default:
      return AclStatus(ACL_ERROR_INVALID_PARAM, "unknown copy direction");
  }
  if (proto.has_shared()) {
    ACL_ASSIGN_OR_RETURN(copy.host, shared_memory_.Resolve(proto.shared().segment(),
                                                           proto.shared().offset(), copy.count));
    return copy;
  }
  if (copy.direction == CopyRequest::Direction::kHostToDevice) {
    if (proto.inline_data().size() != copy.count) {
      return AclStatus(ACL_ERROR_INVALID_PARAM, "inline copy data does not match its count");
    }
    auto bytes = std::make_shared<std::string>(proto.inline_data());
    copy.host = HostSpan{reinterpret_cast<uint8_t*>(bytes->data()), bytes, bytes->size()};
    return copy;
  }
  // Larger device-to-host copies must use shared memory: a reply stays small.
  if (reply_data == nullptr || copy.count > kMaxReplyCopyBytes) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "a device-to-host copy this large needs a shared memory destination");
  }
  auto bytes = std::make_shared<std::string>(copy.count, '\0');
  copy.host = HostSpan{reinterpret_cast<uint8_t*>(bytes->data()), bytes};
  copy.host.read_next = true;  // into the reply next
  *reply_data = std::move(bytes);
  return copy;
}

namespace {

CoreLimits CoreLimitsOf(const acl::v1::CoreLimits& proto) {
  return CoreLimits{proto.cube(), proto.vector()};
}

Runtime::ThreadKernel KernelOf(const acl::v1::AsyncOp& op) {
  const acl::v1::LaunchKernel& launch = op.launch_kernel();
  return {op.thread(),
          KernelRequest{launch.name(), launch.block_dim(),
                        {launch.args().begin(), launch.args().end()},
                        CoreLimitsOf(launch.core_limits())}};
}

absl::StatusOr<OverflowRequest> ToOverflow(const acl::v1::OverflowOp& proto) {
  OverflowRequest overflow;
  switch (proto.kind()) {
    case acl::v1::OverflowOp::SWITCH_ON:
      overflow.kind = OverflowRequest::Kind::kSwitchOn;
      break;
    case acl::v1::OverflowOp::SWITCH_OFF:
      overflow.kind = OverflowRequest::Kind::kSwitchOff;
      break;
    case acl::v1::OverflowOp::COPY_STATUS:
      overflow.kind = OverflowRequest::Kind::kCopyStatus;
      break;
    case acl::v1::OverflowOp::CLEAR_STATUS:
      overflow.kind = OverflowRequest::Kind::kClearStatus;
      break;
    default:
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat("overflow operation ", proto.kind(), " is unknown"));
  }
  overflow.device_dst = proto.device_dst();
  return overflow;
}

RandomParameter ToRandomParameter(const acl::v1::RandomParameter& proto) {
  return RandomParameter{proto.at_device(), proto.value(), proto.size()};
}

RandomRequest ToRandom(const acl::v1::RandomRequest& proto) {
  RandomRequest random;
  random.function = proto.function();
  random.data_type = proto.data_type();
  random.device_result = proto.device_result();
  random.device_counter = proto.device_counter();
  random.device_workspace = proto.device_workspace();
  random.seed = ToRandomParameter(proto.seed());
  random.count = ToRandomParameter(proto.count());
  random.first = ToRandomParameter(proto.first());
  random.second = ToRandomParameter(proto.second());
  return random;
}

}  // namespace

absl::Status SessionHandler::ApplyAsync(const acl::v1::AsyncOp& op) {
  switch (op.op_case()) {
    case acl::v1::AsyncOp::kLaunchKernel:
      return runtime_.LaunchKernels(session_, op.stream(), {KernelOf(op)})[0];
    case acl::v1::AsyncOp::kCopy: {
      ACL_ASSIGN_OR_RETURN(CopyRequest copy, ToCopy(op.copy(), nullptr));
      return runtime_.EnqueueCopy(session_, op.stream(), op.thread(), std::move(copy)).status();
    }
    case acl::v1::AsyncOp::kReduce: {
      const acl::v1::ReduceRequest& reduce = op.reduce();
      return runtime_
          .EnqueueReduce(session_, op.stream(), op.thread(),
                         ReduceRequest{reduce.device_dst(), reduce.device_src(), reduce.count(),
                                       reduce.kind(), reduce.data_type()})
          .status();
    }
    case acl::v1::AsyncOp::kWaitValue: {
      const acl::v1::ValueWait& wait = op.wait_value();
      return runtime_
          .EnqueueValueWait(session_, op.stream(), op.thread(),
                            ValueWaitRequest{wait.address(), wait.value(), wait.flag()})
          .status();
    }
    case acl::v1::AsyncOp::kOverflow: {
      ACL_ASSIGN_OR_RETURN(OverflowRequest overflow, ToOverflow(op.overflow()));
      return runtime_.EnqueueOverflow(session_, op.stream(), op.thread(), overflow).status();
    }
    case acl::v1::AsyncOp::kRandom:
      return runtime_.EnqueueRandom(session_, op.stream(), op.thread(), ToRandom(op.random()))
          .status();
    case acl::v1::AsyncOp::kMemset: {
      return runtime_.EnqueueMemset(session_, op.stream(), op.thread(), ToMemset(op.memset()))
          .status();
    }
    case acl::v1::AsyncOp::kRecordEvent:
      return runtime_.RecordEvent(session_, op.record_event().event(), op.stream(), op.thread())
          .status();
    case acl::v1::AsyncOp::kResetEvent:
      return runtime_.ResetEvent(session_, op.reset_event().event(), op.stream(), op.thread())
          .status();
    case acl::v1::AsyncOp::kWaitEvent:
      return runtime_.StreamWaitEvent(session_, op.stream(), op.wait_event().event(), op.thread())
          .status();
    case acl::v1::AsyncOp::kRecordNotify:
      return runtime_.RecordNotify(session_, op.record_notify().notify(), op.stream(), op.thread())
          .status();
    case acl::v1::AsyncOp::kWaitNotify:
      return runtime_
          .WaitAndResetNotify(session_, op.wait_notify().notify(), op.stream(),
                              op.wait_notify().timeout_s(), op.thread())
          .status();
    case acl::v1::AsyncOp::kHostCallback:
      return runtime_
          .EnqueueCallback(session_, op.stream(), op.thread(), op.host_callback().callback_id(),
                           op.host_callback().block())
          .status();
    case acl::v1::AsyncOp::kLaunchFunction: {
      const acl::v1::LaunchFunction& proto = op.launch_function();
      FunctionLaunch launch{proto.function(), proto.block_dim(), proto.args(), {},
                            proto.args_address(), proto.args_size(),
                            CoreLimitsOf(proto.core_limits())};
      for (const acl::v1::Placeholder& placeholder : proto.placeholders()) {
        launch.placeholders.push_back(Placeholder{placeholder.offset(), placeholder.data()});
      }
      return runtime_.LaunchFunction(session_, op.stream(), op.thread(), std::move(launch))
          .status();
    }
    case acl::v1::AsyncOp::OP_NOT_SET:
      break;
  }
  return AclStatus(ACL_ERROR_API_NOT_SUPPORT, "asynchronous operation not understood");
}

void SessionHandler::ApplyBatch(const acl::v1::AsyncBatch& batch) {
  const auto& ops = batch.ops();
  if (ops.size() > kMaxBatchOpsAccepted) {
    // None of it runs: what the next synchronization reports.
    return DeferIfFailed(AclStatus(
        ACL_ERROR_INVALID_PARAM, absl::StrCat("a batch of ", ops.size(),
                                              " asynchronous operations is more than the ",
                                              kMaxBatchOpsAccepted, " one batch may carry; none ran")));
  }
  for (int i = 0; i < ops.size();) {
    if (ops[i].op_case() != acl::v1::AsyncOp::kLaunchKernel) {
      DeferIfFailed(ApplyAsync(ops[i]));
      ++i;
      continue;
    }
    // A run of launches on one stream goes in together (Runtime::LaunchKernels).
    const uint64_t stream = ops[i].stream();
    std::vector<Runtime::ThreadKernel> kernels;
    for (; i < ops.size() && ops[i].op_case() == acl::v1::AsyncOp::kLaunchKernel &&
           ops[i].stream() == stream;
         ++i) {
      kernels.push_back(KernelOf(ops[i]));
    }
    for (absl::Status& status : runtime_.LaunchKernels(session_, stream, std::move(kernels))) {
      DeferIfFailed(std::move(status));
    }
  }
}

void SessionHandler::DeferIfFailed(absl::Status status) {
  if (status.ok()) return;
  SessionLog::For(session_)->Info("asynchronous operation failed with {}: {}", AclCodeOf(status),
                                  std::string(status.message()));
  absl::MutexLock lock(&mu_);
  if (deferred_error_.ok()) deferred_error_ = std::move(status);
}

void SessionHandler::Handle(const ClientMessage& request) {
  if (!renumbering_.active() || !DeviceRenumbering::CarriesDevice(request)) {
    return Dispatch(request);
  }
  ClientMessage renumbered = request;
  absl::Status status = renumbering_.ToHost(renumbered);
  if (!status.ok()) return AnswerStatus(request.call_id(), status);
  Dispatch(renumbered);
}

void SessionHandler::Dispatch(const ClientMessage& request) {
  const uint64_t call_id = request.call_id();
  Reply reply;
  auto answer_status = [&](const absl::Status& status) { AnswerStatus(call_id, status); };
  auto answer_count = [&](const absl::StatusOr<uint64_t>& count) {
    if (!count.ok()) return answer_status(count.status());
    reply.mutable_init_count()->set_count(*count);
    Answer(call_id, std::move(reply));
  };
  auto answer_handle = [&](const absl::StatusOr<uint64_t>& handle) {
    AnswerHandle(call_id, handle);
  };
  auto answer_context = [&](const absl::StatusOr<ContextInfo>& context) {
    if (!context.ok()) return answer_status(context.status());
    SetContext(*context, reply);
    Answer(call_id, std::move(reply));
  };
  // Synchronizations first report an earlier asynchronous operation's error.
  auto synchronize = [&](int32_t timeout_ms, auto&& start) {
    absl::Status deferred = TakeDeferredError();
    if (!deferred.ok()) return answer_status(deferred);
    absl::StatusOr<absl::Duration> timeout = Timeout(timeout_ms);
    if (!timeout.ok()) return answer_status(timeout.status());
    if (Done done = Later(call_id)) start(*timeout, std::move(done));
  };

  switch (request.body_case()) {
    case ClientMessage::kAsyncBatch:
      return ApplyBatch(request.async_batch());
    case ClientMessage::kClientFeatures:
      if (request.client_features().revocation_notices()) {
        runtime_.TakeNoticeOfRevocations(session_);
      }
      return;
    case ClientMessage::kRevocationSeen:
      return runtime_.RevocationSeen(session_, request.revocation_seen().notice());
    case ClientMessage::kCallbackDone: {
      // A late answer (after the callback timeout) is only worth a log line.
      absl::Status status =
          runtime_.AcknowledgeCallback(session_, request.callback_done().callback_id());
      if (!status.ok()) SessionLog::For(session_)->Info("{}", std::string(status.message()));
      return;
    }
    case ClientMessage::kInitCount:
      return answer_count(runtime_.InitCount(session_));
    case ClientMessage::kAddInitReference:
      return answer_count(runtime_.AddInitReference(session_));
    case ClientMessage::kInitialize: {
      const acl::v1::InitializeRequest& init = request.initialize();
      InitSettings settings;
      settings.config_content = init.config_content();
      if (init.has_default_device()) settings.default_device = init.default_device();
      settings.settings.insert(init.settings().begin(), init.settings().end());
      return answer_status(runtime_.Initialize(session_, settings));
    }
    case ClientMessage::kAbortInit:
      return answer_status(runtime_.AbortInit(session_));
    case ClientMessage::kDropInitReference:
      return answer_count(runtime_.DropInitReference(session_));
    case ClientMessage::kFinalize:
      if (Done done = Later(call_id)) runtime_.Finalize(session_, std::move(done));
      return;
    case ClientMessage::kGetDeviceCount:
      reply.mutable_device_count()->set_count(renumbering_.view().count());
      return Answer(call_id, std::move(reply));
    case ClientMessage::kSetDevice:
      return answer_context(runtime_.SetDevice(session_, request.set_device().device_id()));
    case ClientMessage::kResetDevice:
      if (Done done = Later(call_id)) {
        runtime_.ResetDevice(session_, request.reset_device().device_id(),
                             request.reset_device().force(), std::move(done));
      }
      return;
    case ClientMessage::kSynchronizeDevice: {
      const int32_t device = request.synchronize_device().device_id();
      return synchronize(request.synchronize_device().timeout_ms(),
                         [&](absl::Duration timeout, Done done) {
                           runtime_.SynchronizeDevice(session_, device, timeout, std::move(done));
                         });
    }
    case ClientMessage::kCreateContext:
      return answer_context(runtime_.CreateContext(session_, request.create_context().device_id()));
    case ClientMessage::kDestroyContext:
      if (Done done = Later(call_id)) {
        runtime_.DestroyContext(session_, request.destroy_context().context(), std::move(done));
      }
      return;
    case ClientMessage::kCreateStream: {
      const acl::v1::CreateStreamRequest& create = request.create_stream();
      return answer_handle(
          runtime_.CreateStream(session_, create.context(), create.priority(), create.flags(),
                                create.saturate_floats()));
    }
    case ClientMessage::kDestroyStream:
      if (Done done = Later(call_id)) {
        runtime_.DestroyStream(session_, request.destroy_stream().stream(),
                               request.destroy_stream().force(), std::move(done));
      }
      return;
    case ClientMessage::kSynchronizeStream: {
      const uint64_t stream = request.synchronize_stream().stream();
      return synchronize(request.synchronize_stream().timeout_ms(),
                         [&](absl::Duration timeout, Done done) {
                           runtime_.SynchronizeStream(session_, stream, timeout, std::move(done));
                         });
    }
    case ClientMessage::kStreamQuery: {
      absl::StatusOr<bool> idle = runtime_.StreamIdle(session_, request.stream_query().stream());
      if (!idle.ok()) return answer_status(idle.status());
      reply.mutable_stream_query()->set_complete(*idle);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kAbortStream:
      return answer_status(runtime_.AbortStream(session_, request.abort_stream().stream()));
    case ClientMessage::kStopStream:
      return answer_status(runtime_.StopStream(session_, request.stop_stream().stream()));
    case ClientMessage::kSetStreamFailureMode:
      return answer_status(runtime_.SetStreamFailureMode(session_,
                                                         request.set_stream_failure_mode().stream(),
                                                         request.set_stream_failure_mode().mode()));
    case ClientMessage::kSetStreamAllocator:
      return answer_status(
          runtime_.SetStreamAllocator(session_, request.set_stream_allocator().stream(),
                                      request.set_stream_allocator().registered()));
    case ClientMessage::kCreateEvent:
      return answer_handle(runtime_.CreateEvent(session_, request.create_event().device_id(),
                                                request.create_event().flags()));
    case ClientMessage::kDestroyEvent:
      return answer_status(runtime_.DestroyEvent(session_, request.destroy_event().event()));
    case ClientMessage::kCreateNotify:
      return answer_handle(runtime_.CreateNotify(session_, request.create_notify().device_id()));
    case ClientMessage::kDestroyNotify:
      return answer_status(runtime_.DestroyNotify(session_, request.destroy_notify().notify()));
    case ClientMessage::kSynchronizeEvent: {
      const uint64_t event = request.synchronize_event().event();
      return synchronize(request.synchronize_event().timeout_ms(),
                         [&](absl::Duration timeout, Done done) {
                           runtime_.SynchronizeEvent(session_, event, timeout, std::move(done));
                         });
    }
    case ClientMessage::kQueryEvent: {
      absl::StatusOr<EventStatus> status =
          runtime_.QueryEvent(session_, request.query_event().event());
      if (!status.ok()) return answer_status(status.status());
      reply.mutable_event_status()->set_complete(status->complete);
      reply.mutable_event_status()->set_recorded_and_complete(status->recorded_and_complete);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kEventElapsedTime: {
      absl::StatusOr<float> ms = runtime_.EventElapsedMs(
          session_, request.event_elapsed_time().start(), request.event_elapsed_time().end());
      if (!ms.ok()) return answer_status(ms.status());
      reply.mutable_elapsed_time()->set_milliseconds(*ms);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kEventTimestamp: {
      absl::StatusOr<uint64_t> us =
          runtime_.EventTimestampUs(session_, request.event_timestamp().event());
      if (!us.ok()) return answer_status(us.status());
      reply.mutable_event_timestamp()->set_microseconds(*us);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kMalloc: {
      absl::StatusOr<uint64_t> address =
          runtime_.Malloc(session_, request.malloc().device_id(), request.malloc().size());
      if (!address.ok()) return answer_status(address.status());
      reply.mutable_device_address()->set_address(*address);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kFree:
      return answer_status(runtime_.Free(session_, request.free().address()));
    case ClientMessage::kExportMemory: {
      const acl::v1::ExportMemoryRequest& exported = request.export_memory();
      absl::StatusOr<std::string> key =
          runtime_.ExportMemory(session_, exported.address(), exported.size(), exported.flags());
      if (!key.ok()) return answer_status(key.status());
      reply.mutable_sharing_key()->set_key(*key);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kSetImportPids: {
      const acl::v1::SetImportPidsRequest& whitelist = request.set_import_pids();
      return answer_status(runtime_.SetImportPids(
          session_, whitelist.key(), {whitelist.pids().begin(), whitelist.pids().end()}));
    }
    case ClientMessage::kSetExportAttribute: {
      const acl::v1::SetExportAttributeRequest& attribute = request.set_export_attribute();
      return answer_status(runtime_.SetExportAttribute(session_, attribute.key(),
                                                       attribute.type(), attribute.value()));
    }
    case ClientMessage::kImportMemory: {
      absl::StatusOr<uint64_t> address =
          runtime_.ImportMemory(session_, request.import_memory().key());
      if (!address.ok()) return answer_status(address.status());
      reply.mutable_device_address()->set_address(*address);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kMallocPhysical: {
      const acl::v1::MallocPhysicalRequest& allocate = request.malloc_physical();
      return answer_handle(runtime_.MallocPhysical(session_, allocate.device_id(),
                                                   allocate.size(), allocate.huge_pages()));
    }
    case ClientMessage::kRetainPhysical:
      return answer_handle(runtime_.RetainPhysical(session_, request.retain_physical().address()));
    case ClientMessage::kPhysicalProperties: {
      absl::StatusOr<PhysicalMemory::Properties> properties =
          runtime_.PhysicalProperties(session_, request.physical_properties().handle());
      if (!properties.ok()) return answer_status(properties.status());
      reply.mutable_physical_info()->set_device_id(properties->device);
      reply.mutable_physical_info()->set_huge_pages(properties->huge_pages);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kMemoryAccess: {
      absl::StatusOr<bool> readwrite = runtime_.MemoryAccess(
          session_, request.memory_access().address(), request.memory_access().device_id());
      if (!readwrite.ok()) return answer_status(readwrite.status());
      reply.mutable_physical_info()->set_device_id(request.memory_access().device_id());
      reply.mutable_physical_info()->set_readwrite(*readwrite);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kFreePhysical:
      return answer_status(runtime_.FreePhysical(session_, request.free_physical().handle()));
    case ClientMessage::kReserveAddresses: {
      const acl::v1::ReserveAddressesRequest& reserve = request.reserve_addresses();
      absl::StatusOr<uint64_t> address =
          runtime_.ReserveAddresses(session_, reserve.device_id(), reserve.size());
      if (!address.ok()) return answer_status(address.status());
      reply.mutable_device_address()->set_address(*address);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kReleaseAddresses:
      return answer_status(
          runtime_.ReleaseAddresses(session_, request.release_addresses().address()));
    case ClientMessage::kMapMemory: {
      const acl::v1::MapMemoryRequest& map = request.map_memory();
      return answer_status(runtime_.MapMemory(session_, map.address(), map.size(), map.offset(),
                                              map.handle(), map.accessible()));
    }
    case ClientMessage::kUnmapMemory:
      return answer_status(runtime_.UnmapMemory(session_, request.unmap_memory().address()));
    case ClientMessage::kSetMemoryAccess: {
      const acl::v1::SetMemoryAccessRequest& access = request.set_memory_access();
      return answer_status(runtime_.SetMemoryAccess(session_, access.address(), access.size(),
                                                    access.device_id(), access.readwrite()));
    }
    case ClientMessage::kExportPhysical:
      return answer_handle(runtime_.ExportPhysical(session_, request.export_physical().handle(),
                                                   request.export_physical().pid_validation()));
    case ClientMessage::kSetShareablePids: {
      const acl::v1::SetShareablePidsRequest& whitelist = request.set_shareable_pids();
      return answer_status(runtime_.SetShareablePids(
          session_, whitelist.shareable(), {whitelist.pids().begin(), whitelist.pids().end()}));
    }
    case ClientMessage::kImportPhysical:
      return answer_handle(runtime_.ImportPhysical(session_, request.import_physical().shareable(),
                                                   request.import_physical().device_id()));
    case ClientMessage::kCloseMemoryKey:
      return answer_status(runtime_.CloseMemoryKey(session_, request.close_memory_key().key()));
    case ClientMessage::kShareEvent: {
      absl::StatusOr<std::string> key = runtime_.ShareEvent(session_, request.share_event().event());
      if (!key.ok()) return answer_status(key.status());
      reply.mutable_sharing_key()->set_key(*key);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kOpenSharedEvent: {
      absl::StatusOr<Runtime::OpenedEvent> opened =
          runtime_.OpenSharedEvent(session_, request.open_shared_event().key());
      if (!opened.ok()) return answer_status(opened.status());
      acl::v1::SharedEventOpened& out = *reply.mutable_shared_event();
      out.set_event(opened->id);
      out.set_device_id(opened->device);
      out.set_flags(opened->flags);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kShareNotify: {
      absl::StatusOr<std::string> key = runtime_.ShareNotify(
          session_, request.share_notify().notify(), request.share_notify().pid_validation());
      if (!key.ok()) return answer_status(key.status());
      reply.mutable_sharing_key()->set_key(*key);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kSetNotifyImportPids: {
      const acl::v1::SetNotifyImportPidsRequest& whitelist = request.set_notify_import_pids();
      return answer_status(runtime_.SetNotifyImportPids(
          session_, whitelist.notify(), {whitelist.pids().begin(), whitelist.pids().end()}));
    }
    case ClientMessage::kImportNotify: {
      absl::StatusOr<Runtime::OpenedNotify> opened =
          runtime_.ImportNotify(session_, request.import_notify().key());
      if (!opened.ok()) return answer_status(opened.status());
      reply.mutable_shared_notify()->set_notify(opened->id);
      reply.mutable_shared_notify()->set_device_id(opened->device);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kPeerPid: {
      absl::StatusOr<int32_t> pid = runtime_.PeerPid(session_);
      if (!pid.ok()) return answer_status(pid.status());
      reply.mutable_peer_pid()->set_pid(*pid);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kCopy: {
      std::shared_ptr<std::string> data;
      absl::StatusOr<CopyRequest> copy = ToCopy(request.copy(), &data);
      if (!copy.ok()) return answer_status(copy.status());
      // Copies to and from the client's shared memory, and between device
      // buffers, may be gigabytes: they run in slices. One whose bytes ride
      // the message (at most a message's) or its reply (kMaxReplyCopyBytes)
      // runs here: queued, it would keep its bytes in acld meanwhile.
      if (request.copy().has_shared() ||
          request.copy().direction() == acl::v1::CopyRequest::DEVICE_TO_DEVICE) {
        return RunSync(call_id, runtime_.PrepareSyncCopy(session_, *copy));
      }
      absl::Status status = runtime_.Copy(session_, *copy);
      if (!status.ok() || data == nullptr) return answer_status(status);
      reply.set_data(std::move(*data));
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kCopyToClient: {
      const acl::v1::CopyRequest& copy = request.copy_to_client().copy();
      if (copy.direction() != acl::v1::CopyRequest::DEVICE_TO_HOST ||
          copy.count() > kMaxReplyCopyBytes) {
        return answer_status(
            AclStatus(ACL_ERROR_INVALID_PARAM,
                      absl::StrCat("a copy to the client's own memory is device-to-host, at most ",
                                   kMaxReplyCopyBytes >> 20, " MiB per call")));
      }
      // Answered when the stream reaches the copy, with the bytes read then; a
      // failed or discarded copy answers without bytes, and the failure
      // surfaces at the next synchronization.
      auto deliver = [self = shared_from_this(), call_id](absl::StatusOr<std::string> bytes) {
        Reply late;
        if (bytes.ok()) late.set_data(*std::move(bytes));
        self->Answer(call_id, std::move(late));
      };
      absl::Status queued =
          runtime_
              .EnqueueCopyToClient(session_, request.copy_to_client().stream(),
                                   request.copy_to_client().thread(), copy.device_src(),
                                   copy.count(), std::move(deliver))
              .status();
      if (!queued.ok()) answer_status(queued);
      return;
    }
    case ClientMessage::kMemset:
      return RunSync(call_id, runtime_.PrepareSyncMemset(session_, ToMemset(request.memset())));
    case ClientMessage::kGetMemInfo: {
      absl::StatusOr<MemInfo> info =
          runtime_.GetMemInfo(session_, request.get_mem_info().device_id());
      if (!info.ok()) return answer_status(info.status());
      reply.mutable_mem_info()->set_free(info->free);
      reply.mutable_mem_info()->set_total(info->total);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kGetUtilization: {
      absl::StatusOr<Utilization> utilization =
          runtime_.GetUtilization(request.get_utilization().device_id());
      if (!utilization.ok()) return answer_status(utilization.status());
      reply.mutable_utilization()->set_compute_percent(utilization->compute_percent);
      reply.mutable_utilization()->set_memory_percent(utilization->memory_percent);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kObjectsAvailable: {
      absl::StatusOr<ObjectsAvailable> available =
          runtime_.GetObjectsAvailable(session_, request.objects_available().device_id());
      if (!available.ok()) return answer_status(available.status());
      reply.mutable_objects_available()->set_streams(available->streams);
      reply.mutable_objects_available()->set_events(available->events);
      return Answer(call_id, std::move(reply));
    }
    case ClientMessage::kRegisterSharedMemory: {
      const acl::v1::RegisterSharedMemoryRequest& shared = request.register_shared_memory();
      if (desk_ == nullptr) {
        return answer_status(AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                                       "shared memory needs acld's identity socket"));
      }
      // Only the process that handed the memfd over can use its ticket.
      absl::StatusOr<ReceivedMemory> memory = desk_->RedeemMemory(shared.ticket(), pid_, uid_);
      if (!memory.ok()) return answer_status(memory.status());
      if (shared.size() != memory->size) {
        return answer_status(
            AclStatus(ACL_ERROR_INVALID_PARAM,
                      absl::StrCat("shared memory registered as ", shared.size(),
                                   " bytes but handed over as ", memory->size, " bytes")));
      }
      return answer_handle(shared_memory_.Register(*std::move(memory), shared.staging()));
    }
    case ClientMessage::kLoadBinary:
      return LoadBinary(call_id, request.load_binary());
    case ClientMessage::kUnloadBinary:
      return answer_status(runtime_.UnloadBinary(session_, request.unload_binary().binary()));
    case ClientMessage::kGetFunction:
      return answer_handle(runtime_.GetFunction(session_, request.get_function().binary(),
                                                request.get_function().name()));
    case ClientMessage::kUnregisterSharedMemory:
      return answer_status(shared_memory_.Unregister(request.unregister_shared_memory().segment()));
    case ClientMessage::kHello:
      return answer_status(AclStatus(ACL_ERROR_INVALID_PARAM, "the session is already open"));
    case ClientMessage::BODY_NOT_SET:
      break;
  }
  answer_status(AclStatus(ACL_ERROR_API_NOT_SUPPORT,
                          "request not understood by this acld (is the client newer?)"));
}

}  // namespace acld::server
