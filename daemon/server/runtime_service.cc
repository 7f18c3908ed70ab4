#include "daemon/server/runtime_service.h"

#include <malloc.h>

#include <atomic>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/message_shape.h"
#include "daemon/server/process_command.h"
#include "daemon/server/session_handler.h"
#include "daemon/server/session_ring.h"
#include "daemon/server/session_writer.h"
#include "daemon/server/text_sanitizer.h"
#include "daemon/server/uid_owners.h"
#include "proto/acl/grpc_status.h"
#include "proto/acl/protocol.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "spdlog/spdlog.h"

namespace acld::server {

using acl::v1::ClientMessage;
using acl::v1::ServerMessage;

namespace {

// Requests one turn of a session's channel handles before the pool serves
// others: enough to amortize a wake-up, few enough to keep turns short. A
// batch of launches can take a while to apply, so a turn also ends once it
// has run this long.
constexpr int kRequestsPerTurn = 64;
constexpr absl::Duration kTurnTime = absl::Microseconds(500);
// A Hello is a token, a ticket, a command line of at most 256 bytes and a
// few numbers, well under 1 KiB; a larger one is refused unparsed.
constexpr size_t kMaxHelloBytes = 64 << 10;

// Where a pool thread parses the request it handles: a batch of launches
// becomes part of one block rather than allocations per operation. The first
// 256 KiB stay with the thread (a reset keeps them); a larger request adds
// blocks of at most 64 KiB (below malloc's mmap threshold), freed at the reset.
google::protobuf::Arena& RequestArena() {
  constexpr size_t kKeptBytes = 256 << 10;
  thread_local std::unique_ptr<char[]> kept(new char[kKeptBytes]);
  thread_local google::protobuf::Arena arena([] {
    google::protobuf::ArenaOptions options;
    options.initial_block = kept.get();
    options.initial_block_size = kKeptBytes;
    options.max_block_size = 64 << 10;
    return options;
  }());
  return arena;
}

}  // namespace

// The gRPC stream as a carrier: one write at a time, the next one started
// when gRPC reports the last one done (OnWriteDone).
class GrpcStreamCarrier : public SessionWriter::Carrier {
 public:
  using StartWrite = std::function<void(const grpc::ByteBuffer*)>;
  explicit GrpcStreamCarrier(StartWrite start_write) : start_write_(std::move(start_write)) {}

  bool Push() override { return !in_flight_.load(); }
  void Take(const ServerMessage& message) override {
    if (broken_.load()) return;  // the stream is gone: nothing reaches the client
    bool own_buffer = false;
    if (!grpc::SerializationTraits<ServerMessage>::Serialize(message, &out_, &own_buffer).ok()) {
      broken_.store(true);  // cannot happen with a message acld made; the client hears no more
      return;
    }
    in_flight_.store(true);
    start_write_(&out_);
  }
  bool Idle() const override { return !in_flight_.load(); }
  // gRPC is done with the write in flight; `ok` false: the stream broke.
  void WriteDone(bool ok) {
    if (!ok) broken_.store(true);
    // gRPC is done with it: not kept (up to 32 MiB) until the next message,
    // once the writer no longer counts it; and Take serializes into an
    // empty buffer.
    out_.Clear();
    in_flight_.store(false);
  }

 private:
  const StartWrite start_write_;
  grpc::ByteBuffer out_;  // the message in flight: gRPC reads it until WriteDone
  std::atomic<bool> in_flight_{false};
  std::atomic<bool> broken_{false};
};

// What the channel pool runs for a session on the shared-memory channel: its
// requests, in order, and the writer's sends that waited for room.
class RuntimeService::RingTurn : public ChannelPool::Member,
                                  public std::enable_shared_from_this<RingTurn> {
 public:
  RingTurn(ChannelPool& pool, std::shared_ptr<SessionRing> ring,
           std::shared_ptr<SessionWriter> writer, std::shared_ptr<SessionHandler> handler,
           std::function<void(const absl::Status&)> fault)
      : pool_(pool),
        ring_(std::move(ring)),
        writer_(std::move(writer)),
        handler_(std::move(handler)),
        fault_(std::move(fault)) {}

  bool Serve() override {
    if (stopped_.load()) return false;
    ring_->DisarmRead();
    writer_->Resume();  // the client may have freed room for what waits
    bool spun = false;
    const absl::Time end = absl::Now() + kTurnTime;
    for (int served = 0; served < kRequestsPerTurn;) {
      if (served > 0 && absl::Now() >= end) return true;  // more later, after the others
      // A client that does not read its replies gets no more served: it
      // stalls only itself, and acld queues nothing for it. The ring is
      // armed to ring when the client makes room, which brings a turn.
      if (!ring_->Idle()) return false;
      // Nor while its queued work is at its limit: this thread serves every
      // session and must not wait for one (QueueBudget). The request stays
      // in the ring, the client waits for room in it, and room in the
      // budget brings a turn.
      if (handler_->AwaitQueueRoom([turn = weak_from_this()] {
            if (auto waiting = turn.lock()) waiting->Wake();
          })) {
        return false;
      }
      google::protobuf::Arena& arena = RequestArena();
      absl::StatusOr<const ClientMessage*> request = ring_->TryRead(arena);
      if (!request.ok()) {
        arena.Reset();
        return Fault(request.status());
      }
      if (*request != nullptr) {
        handler_->Handle(**request);
        arena.Reset();  // the handler copied what it keeps
        ++served;
        continue;
      }
      // A client making calls one after another sends its next one within
      // microseconds: waiting that long here costs less than a wake-up. Again
      // after each request a spin brought (a client making calls in a row, a
      // host-func chain answering callback after callback; the turn's end
      // bounds it). Not while other sessions wait for a thread: they come
      // first, and before spinning again the doorbells that rang meanwhile
      // are collected, or a busy session would keep the thread from them.
      if (spun ? pool_.OthersRang() : pool_.OthersWaiting()) break;
      spun = true;
      absl::StatusOr<bool> arrived = ring_->SpinForRequest();
      if (!arrived.ok()) return Fault(arrived.status());
      if (!*arrived) break;
    }
    absl::StatusOr<bool> ready = ring_->ArmRead();
    if (!ready.ok()) return Fault(ready.status());
    return *ready;
  }

  // No turn does anything from now on.
  void Stop() { stopped_.store(true); }

  // Its id in the pool, once added.
  void SetId(uint64_t id) { id_.store(id); }
  // A turn soon: the writer finished a message on another thread, and a
  // turn that stopped serving while it waited to go out has nothing else to
  // bring it back (the request ring was not armed).
  void Wake() {
    const uint64_t id = id_.load();
    if (id != 0 && !stopped_.load()) pool_.Wake(id);
  }

 private:
  bool Fault(const absl::Status& status) {
    stopped_.store(true);
    fault_(status);
    return false;
  }

  ChannelPool& pool_;
  const std::shared_ptr<SessionRing> ring_;
  const std::shared_ptr<SessionWriter> writer_;
  const std::shared_ptr<SessionHandler> handler_;
  const std::function<void(const absl::Status&)> fault_;
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> id_{0};
};

namespace {

// The request gRPC read, checked and parsed as the channel's are.
absl::Status ParseStreamRequest(const grpc::ByteBuffer& buffer, ClientMessage& request) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("a request on the session stream cannot be read");
  }
  std::string bytes;
  bytes.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return ParseClientBytes(bytes, request);
}

}  // namespace

// One Session stream, from its Hello to its end. gRPC runs its reactions;
// none blocks.
class RuntimeService::SessionCall
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  SessionCall(RuntimeService& service, grpc::CallbackServerContext* context)
      : service_(service),
        context_(context),
        entrance_(service.EntranceOf(context)),
        pending_tenant_(service.PendingTenantOf(entrance_, context)) {
    carrier_ = std::make_shared<GrpcStreamCarrier>(
        [this](const grpc::ByteBuffer* message) { StartWrite(message); });
    // Until its Hello a stream is pending: few at a time, and few of them any
    // one user's, each for a bounded time.
    if (!pending_tenant_.has_value()) {
      // Not counted as nobody's (uid -1): that would be a pending budget of
      // its own, beside its user's. acld accepts every connection itself,
      // so this one is closing (or came through a quota group's socket
      // being deleted).
      state_ = State::kEnded;
      Finish(service_.Refuse(grpc::StatusCode::PERMISSION_DENIED,
                             "acld cannot tell which user opened this connection: it is no "
                             "longer one acld serves"));
      return;
    }
    std::optional<std::string> refusal = service_.AdmitPending(*pending_tenant_);
    if (refusal.has_value()) {
      state_ = State::kEnded;
      Finish(service_.Refuse(grpc::StatusCode::RESOURCE_EXHAUSTED, *refusal));
      return;
    }
    deadline_ = service_.hello_deadlines_.Arm(context_,
                                              absl::Now() + service_.limits_.hello_timeout);
    StartRead(&request_bytes_);
  }

  void OnReadDone(bool ok) override {
    if (ok && state_ == State::kOpen && live_->ring != nullptr) {
      // A session on its channel says nothing more on the stream: not parsed.
      request_bytes_.Clear();
      service_.channel_faults_.Warn(
          "session {}: a request came on the stream beside its channel; the session ends",
          live_->id);
      End();
      return;
    }
    absl::Status parsed = absl::OkStatus();
    if (ok && state_ == State::kHello && request_bytes_.Length() > kMaxHelloBytes) {
      // Kept for the session's life otherwise (a ring session reads no more).
      parsed = absl::InvalidArgumentError(absl::StrCat(
          "a Hello of ", request_bytes_.Length(), " bytes; at most ", kMaxHelloBytes));
    } else if (ok) {
      parsed = ParseStreamRequest(request_bytes_, request_);
    }
    request_bytes_.Clear();  // not held beside request_ while the session waits for room
    if (state_ == State::kHello) {
      OnHello(ok, parsed);
      return;
    }
    if (!ok) {
      End();
      return;
    }
    if (!parsed.ok()) {
      service_.channel_faults_.Warn("session {}: {}; the session ends", live_->id,
                                    std::string(parsed.message()));
      End();
      return;
    }
    handler_->Handle(request_);
    // Its strings and unknown fields, which Clear() would keep allocated
    // while the session waits for room or for its next request.
    ClientMessage().Swap(&request_);
    ReadWhenRoom();
  }

  // The next read waits while the session's queued work (or its user's) is at
  // its limit (gRPC's threads serve every session: none may wait for one).
  // Room, the end of the patience or of the session brings it, and is asked
  // again: room in a user's shared limit wakes all of its waiting sessions at
  // once. Until then nothing ends this call, so `this` is still there.
  void ReadWhenRoom() {
    if (!handler_->AwaitQueueRoom([this] { ReadWhenRoom(); })) StartRead(&request_bytes_);
  }

  void OnWriteDone(bool ok) override {
    carrier_->WriteDone(ok);
    if (live_ != nullptr) live_->writer->Resume();
  }

  void OnDone() override {
    if (live_ != nullptr) service_.CallDone(live_);
    delete this;
  }

 private:
  enum class State { kHello, kOpen, kEnded };

  void OnHello(bool ok, const absl::Status& parsed) {
    const bool in_time = service_.hello_deadlines_.Disarm(deadline_);
    service_.EndPending(*pending_tenant_);
    state_ = State::kEnded;
    if (!in_time) {
      service_.refusals_.Info("a connection sent no Hello within {}; its stream was cancelled",
                              absl::FormatDuration(service_.limits_.hello_timeout));
      Finish(grpc::Status(
          grpc::StatusCode::DEADLINE_EXCEEDED,
          absl::StrCat("no Hello within ", absl::FormatDuration(service_.limits_.hello_timeout),
                       " (--hello_timeout)")));
      return;
    }
    if (!ok || !parsed.ok() || !request_.has_hello()) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          parsed.ok() ? "a session starts with Hello"
                                      : std::string(parsed.message())));
      return;
    }
    absl::StatusOr<Opened> opened = service_.Open(request_, entrance_, context_, carrier_);
    if (!opened.ok()) {
      Finish(ToGrpcStatus(opened.status()));
      return;
    }
    live_ = std::move(opened->live);
    handler_ = std::move(opened->handler);
    state_ = State::kOpen;
    const uint64_t hello_call = request_.call_id();
    ClientMessage().Swap(&request_);  // not held for the session's life
    handler_->Open(hello_call, live_->ring != nullptr);
    if (live_->ring != nullptr) service_.ServeChannel(live_, handler_);
    // A read stays pending for the life of the session: its failure is how
    // acld learns that the process went away (or that the call was cancelled).
    // Started last: its failure ends the session (End), which takes
    // handler_, possibly on another thread at once.
    StartRead(&request_bytes_);
  }

  // The stream ended: reap, then finish the call.
  void End() {
    state_ = State::kEnded;
    service_.Reap(live_, std::move(handler_), [this] { Finish(grpc::Status::OK); });
  }

  RuntimeService& service_;
  grpc::CallbackServerContext* const context_;
  const Entrance entrance_;
  const std::optional<Tenant> pending_tenant_;  // none: refused
  std::shared_ptr<GrpcStreamCarrier> carrier_;
  State state_ = State::kHello;
  uint64_t deadline_ = 0;
  grpc::ByteBuffer request_bytes_;  // what gRPC reads into
  ClientMessage request_;           // parsed from it
  std::shared_ptr<Live> live_;
  std::shared_ptr<SessionHandler> handler_;
};

RuntimeService::RuntimeService(Runtime& runtime, PeerCredentialDesk* peers, SessionLimits limits)
    : runtime_(runtime),
      peers_(peers),
      limits_(limits),
      segments_(std::make_shared<SegmentBudget>(limits.max_host_segments_per_uid,
                                                limits.max_host_segments)),
      messages_(std::make_shared<MessageBudget>(limits.max_message_bytes_per_uid,
                                                limits.message_bytes_allowance)),
      pending_by_tenant_(limits.max_pending_hellos_per_uid),
      pool_(limits.channel_threads > 0 ? limits.channel_threads : ChannelPool::DefaultThreads()) {}

RuntimeService::~RuntimeService() = default;

void RuntimeService::Live::Cancel(ChannelPool& pool) {
  absl::MutexLock lock(&mu);
  cancelled = true;
  if (turn != nullptr) turn->Stop();
  if (pool_id != 0) {
    pool.Remove(pool_id);
    pool_id = 0;
  }
  if (end_direct) {
    end_direct();  // posts its end: nothing here waits
  } else if (context != nullptr && !context_gone) {
    context->TryCancel();
  }
}

grpc::Status RuntimeService::Refuse(grpc::StatusCode code, const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
  }
  refusals_.Warn("{}", message);
  return grpc::Status(code, message);
}

absl::Status RuntimeService::RefuseOpen(grpc::StatusCode code, const std::string& message) {
  const grpc::Status status = Refuse(code, message);
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

Entrance RuntimeService::EntranceOf(grpc::CallbackServerContext* context) const {
  std::optional<Entrance> group_entrance;
  if (find_entrance_) group_entrance = find_entrance_(context);
  return group_entrance.has_value() ? *std::move(group_entrance) : HostEntrance();
}

std::optional<Tenant> RuntimeService::PendingTenantOf(const Entrance& entrance,
                                                      grpc::CallbackServerContext* context) const {
  if (entrance.group != nullptr) return Tenant(0, entrance.group);
  if (!find_peer_uid_) return Tenant(static_cast<uint32_t>(-1), nullptr);  // no acceptor: tests
  std::optional<uint32_t> uid = find_peer_uid_(context);
  if (!uid.has_value()) return std::nullopt;
  return Tenant(UidOwners::HostCountedAs(*uid), nullptr);
}

std::optional<std::string> RuntimeService::AdmitPending(const Tenant& tenant) {
  absl::MutexLock lock(&mu_);
  if (pending_ >= limits_.max_pending_hellos) {
    return absl::StrCat("acld already has ", limits_.max_pending_hellos, " session streams ",
                        kWaitingForHello, " (--max_pending_hellos); try again");
  }
  if (!pending_by_tenant_.Fits(tenant, 1)) {
    return absl::StrCat(tenant.ToString(), " already has ", pending_by_tenant_.limit(),
                        " session streams ", kWaitingForHello,
                        " (--max_pending_hellos_per_uid); try again");
  }
  ++pending_;
  pending_by_tenant_.Add(tenant, 1);
  return std::nullopt;
}

void RuntimeService::EndPending(const Tenant& tenant) {
  absl::MutexLock lock(&mu_);
  --pending_;
  pending_by_tenant_.Subtract(tenant, 1);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* RuntimeService::Session(
    grpc::CallbackServerContext* context) {
  return new SessionCall(*this, context);
}

absl::StatusOr<RuntimeService::Opened> RuntimeService::Open(
    const ClientMessage& request, const Entrance& entrance, grpc::CallbackServerContext* context,
    std::shared_ptr<SessionWriter::Carrier> stream) {
  const acl::v1::Hello& hello = request.hello();
  if (hello.protocol_version() < kOldestProtocolVersion ||
      hello.protocol_version() > kProtocolVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("unsupported protocol version: the client speaks version ",
                     hello.protocol_version(), ", this acld speaks versions ",
                     kOldestProtocolVersion, " to ", kProtocolVersion));
  }
  PeerInfo peer{hello.pid(), hello.uid(), 0, ""};
  if (entrance.desk != nullptr) {
    // The kernel's word, not the client's; a token is good only where its
    // desk stands (a group's on the group's socket).
    // And only on a connection its process's user made: a token that leaked
    // to another user (it travels in the Hello) opens nothing, and stays for
    // its owner.
    std::optional<uid_t> connected;
    if (find_peer_uid_) {
      connected = find_peer_uid_(context);
      if (!connected.has_value()) {
        return RefuseOpen(grpc::StatusCode::PERMISSION_DENIED,
                          "acld cannot tell which user opened this connection");
      }
    }
    std::optional<PeerCredentials> credentials =
        entrance.desk->Redeem(hello.peer_token(), connected);
    if (!credentials.has_value()) {
      return RefuseOpen(grpc::StatusCode::PERMISSION_DENIED,
                        "no valid identity token of this connection's user: connect through "
                        "libascendcl");
    }
    peer = PeerFromKernel(*credentials);
  } else {
    peer.command = SanitizeText(hello.command(), kMaxCommandBytes);
  }

  // The shared-memory channel (protocol 2 on), if the client handed one over;
  // a channel that cannot be used leaves the session on the gRPC stream.
  std::shared_ptr<SessionRing> ring;
  if (entrance.desk != nullptr && hello.protocol_version() >= 2 && !hello.ring_ticket().empty()) {
    absl::StatusOr<ReceivedMemory> memory =
        entrance.desk->RedeemMemory(hello.ring_ticket(), peer.pid, peer.uid);
    absl::StatusOr<std::shared_ptr<SessionRing>> mapped =
        memory.ok() ? SessionRing::Map(*std::move(memory))
                    : absl::StatusOr<std::shared_ptr<SessionRing>>(memory.status());
    if (mapped.ok()) {
      ring = *std::move(mapped);
    } else {
      channel_faults_.Info("pid {}: its session channel is not usable ({}); the session stays "
                           "on gRPC", peer.pid, std::string(mapped.status().message()));
    }
  }

  absl::StatusOr<Opened> opened =
      Admit(peer, hello.protocol_version(), entrance, std::move(ring), context, std::move(stream));
  if (opened.ok() && entrance.desk != nullptr) ShowCommandLineOnceRead(*opened->live, peer);
  return opened;
}

PeerInfo RuntimeService::PeerFromKernel(const PeerCredentials& credentials) {
  PeerInfo peer{static_cast<int32_t>(credentials.pid), credentials.uid, 0, ""};
  peer.gid = credentials.gid;
  // As it connected to the identity socket, not now: by a Hello that comes
  // later, the pid may be another process's (which would then pass the
  // whitelists that name it, and lend this session its name).
  peer.start_ticks = credentials.start_ticks;
  peer.range_owner = credentials.range_owner;
  const bool still_there = peer.start_ticks != 0 &&
                           ProcessStartTicks(peer.pid).value_or(0) == peer.start_ticks;
  // What the operator sees comes from the kernel too, bounded and escaped.
  if (still_there) peer.command = ProcessName(peer.pid);
  return peer;
}

void RuntimeService::ShowCommandLineOnceRead(const Live& live, const PeerInfo& peer) {
  // Not `this`: the reader's last `done` may run while this service is
  // being destroyed (its destructor waits for it); the runtime outlives both.
  command_reader_.Ask(peer.pid, live.tenant,
                      [runtime = &runtime_, session = live.id, pid = peer.pid,
                       started = peer.start_ticks](std::string command) {
    // Read long after the open, perhaps: the pid may be another process's
    // by now (then the process that opened the session is gone, and what
    // was read is not its).
    if (command.empty() || started == 0 || ProcessStartTicks(pid).value_or(0) != started) return;
    runtime->SetSessionCommand(session, std::move(command));
  });
}

Entrance RuntimeService::HostEntrance() const {
  // Not owned: the host's desk outlives this service.
  return Entrance{std::shared_ptr<PeerCredentialDesk>(std::shared_ptr<void>(), peers_), nullptr};
}

absl::StatusOr<RuntimeService::Opened> RuntimeService::Admit(
    const PeerInfo& peer, uint32_t protocol_version, const Entrance& entrance,
    std::shared_ptr<SessionRing> ring,
    grpc::CallbackServerContext* context, std::shared_ptr<SessionWriter::Carrier> first_carrier) {
  auto live = std::make_shared<Live>();
  live->ring = std::move(ring);
  live->uid = peer.uid;
  live->pid = peer.pid;
  live->start_ticks = peer.start_ticks;
  live->protocol_version = protocol_version;
  live->group = entrance.group;
  live->tenant = Tenant(peer.counted_uid(), entrance.group);
  live->context = context;
  const QuotaGroup* group = entrance.group.get();
  SessionId session = 0;
  std::string refusal;
  grpc::StatusCode code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  {
    absl::MutexLock lock(&mu_);
    auto of_uid = sessions_per_uid_.find(peer.counted_uid());
    if (!accepting_) {
      code = grpc::StatusCode::UNAVAILABLE;
      refusal = "acld is shutting down";
    } else if (live_.size() >= limits_.max_sessions) {
      refusal =
          absl::StrCat("acld already serves ", limits_.max_sessions, " sessions (--max_sessions)");
    } else if (group != nullptr) {
      // A group's sessions count against the group's cap, not their uid's:
      // in pods everyone is uid 0.
      const uint32_t cap = group->spec().max_sessions != 0 ? group->spec().max_sessions
                                                           : limits_.max_sessions_per_group;
      auto of_group = sessions_per_group_.find(group);
      if (group->retired()) {
        code = grpc::StatusCode::UNAVAILABLE;
        refusal = absl::StrCat("quota group ", group->name(), " was deleted");
      } else if (of_group != sessions_per_group_.end() && of_group->second >= cap) {
        refusal = absl::StrCat("acld already serves ", cap, " sessions of quota group ",
                               group->name(), " (its --sessions, or --max_sessions_per_group)");
      }
    } else if (of_uid != sessions_per_uid_.end() &&
               of_uid->second >= limits_.max_sessions_per_uid) {
      refusal = absl::StrCat("acld already serves ", limits_.max_sessions_per_uid,
                             " sessions of uid ", peer.counted_uid(),
                             peer.range_owner.has_value() ? " (with its subordinate uids)" : "",
                             " (--max_sessions_per_uid)");
    }
    if (refusal.empty()) {
      session = runtime_.OpenSession(peer, entrance.group);
      live->id = session;
      // A client that stops reading while its queue passes the bound is ended:
      // cancelled, and its connection cut.
      std::weak_ptr<Live> weak = live;
      const Tenant& tenant = live->tenant;
      live->writer = std::make_shared<SessionWriter>(
          limits_.max_queued_bytes_per_session,
          [this, weak, session](const std::string& why) {
            SessionLog::For(session)->Warn("its outgoing messages are refused: {}; it ends", why);
            if (auto ended = weak.lock()) CutOff(*ended);
          },
          std::make_unique<MessageBudget::Hold>(messages_, tenant));
      if (live->ring != nullptr) {
        live->ring->ChargeFragmentsTo(std::make_unique<MessageBudget::Hold>(messages_, tenant));
      }
      live_[session] = live;
      if (group != nullptr) {
        ++sessions_per_group_[group];
      } else {
        ++sessions_per_uid_[peer.counted_uid()];
      }
      ++handlers_;
    }
  }
  if (!refusal.empty()) return RefuseOpen(code, refusal);
  live->writer->SetCarrier(std::move(first_carrier));
  // Limited like every line a client causes: a tenant opening sessions over
  // and over floods nothing.
  SessionLog::Open(session, live->tenant)
      ->Info("opened: pid {} uid {}{} gid {} '{}'", peer.pid, peer.uid,
             peer.range_owner.has_value()
                 ? absl::StrCat(" (subordinate: counted as uid ", *peer.range_owner, ")")
                 : "",
             peer.gid, peer.command);

  const SharedMemoryLimits shared_memory_limits{
      limits_.max_host_memory_per_session, limits_.max_host_segments_per_session, segments_,
      live->tenant, [this, weak = std::weak_ptr<Live>(live), session] {
        SessionLog::For(session)->Warn(
            "acld gave up filling the holes of its older client's shared memory (the process "
            "no longer maps it, or keeps punching holes in it); it ends");
        if (auto ending = weak.lock()) ending->Cancel(pool_);
      }};
  const std::shared_ptr<SessionWriter> writer = live->writer;
  auto handler = std::make_shared<SessionHandler>(
      runtime_, session, peer.uid, peer.pid, entrance.desk, shared_memory_limits,
      [writer](const ServerMessage& message) { writer->Write(message); },
      group != nullptr ? group->view() : DeviceView::Host(runtime_.DeviceCount()),
      SyncTransfers::Threads{[this, tenant = live->tenant](
                                 std::function<void()> task) { pool_.Post(std::move(task), tenant); },
                             [this] { return pool_.OthersRang(); }},
      [this, tenant = live->tenant](std::function<void()> call) {
        long_calls_.Run(tenant, std::move(call));
      },
      tenant_waiting_);
  {
    absl::MutexLock lock(&live->mu);
    live->handler = handler;
  }
  return Opened{std::move(live), std::move(handler)};
}

void RuntimeService::ServeChannel(const std::shared_ptr<Live>& live,
                                  std::shared_ptr<SessionHandler> handler) {
  // Everything after the SessionOpened goes over the channel. The stream
  // stays open: its end (the process exited or closed it) ends the session.
  std::weak_ptr<Live> weak = live;
  const SessionId session = live->id;
  auto fault = [this, weak, session](const absl::Status& status) {
    channel_faults_.Warn("session {}: its channel is unusable ({}); the session ends", session,
                         std::string(status.message()));
    if (auto broken = weak.lock()) broken->Cancel(pool_);
  };
  live->ring->OnBroken(fault);
  auto turn =
      std::make_shared<RingTurn>(pool_, live->ring, live->writer, std::move(handler), fault);
  live->ring->OnDrained([weak_turn = std::weak_ptr<RingTurn>(turn)] {
    if (auto drained = weak_turn.lock()) drained->Wake();
  });
  live->writer->SetCarrier(live->ring);
  absl::StatusOr<uint64_t> id;
  {
    absl::MutexLock lock(&live->mu);
    if (live->cancelled) return;  // ended already (its process went at once)
    live->turn = turn;
    id = pool_.Add(live->ring->doorbell(), turn, live->tenant);
    if (id.ok()) {
      live->pool_id = *id;
      turn->SetId(*id);
      // A message that finished going out before the id was known woke
      // nothing: one more turn covers it.
      pool_.Wake(*id);
    }
  }
  if (!id.ok()) fault(id.status());
}

void RuntimeService::Reap(std::shared_ptr<Live> live, std::shared_ptr<SessionHandler> handler,
                          std::function<void()> finish) {
  // In its tenant's turn: a tenant ending sessions by the hundred holds
  // back only its own turns.
  const Tenant tenant = live->tenant;
  pool_.Post([this, live = std::move(live), handler = std::move(handler),
              finish = std::move(finish)]() mutable {
    const absl::Time reap_start = absl::Now();
    const SessionId session = live->id;
    {
      absl::MutexLock lock(&mu_);
      Forget(session);
    }
    const bool reaped_here = runtime_.CloseSession(session);
    // Nothing more goes to the client, and no turn of its channel runs.
    live->Cancel(pool_);
    live->writer->Close();
    const std::shared_ptr<RateLimitedLog> log = SessionLog::For(session);
    SessionLog::Close(session);
    if (handler != nullptr) handler->Close();
    handler.reset();
    if (reaped_here) {
      log->Info("ended (pid {}): its references dropped and resources released in {}", live->pid,
                absl::FormatDuration(absl::Now() - reap_start));
    }
    finish();
  }, tenant);
}

void RuntimeService::CallDone(const std::shared_ptr<Live>& live) {
  {
    absl::MutexLock lock(&live->mu);
    live->context_gone = true;
  }
  bool last_session;
  {
    absl::MutexLock lock(&mu_);
    --handlers_;
    last_session = live_.empty() && handlers_ == 0;
  }
  // glibc keeps what sessions freed in its arenas; when the last one is
  // gone, give that memory back so an idle acld is as small as it started.
  if (last_session) pool_.Post([] { malloc_trim(0); });
}

std::shared_ptr<RuntimeService::Live> RuntimeService::Forget(SessionId session) {
  auto it = live_.find(session);
  if (it == live_.end()) return nullptr;
  std::shared_ptr<Live> live = std::move(it->second);
  live_.erase(it);
  if (live->group != nullptr) {
    auto count = sessions_per_group_.find(live->group.get());
    if (count != sessions_per_group_.end() && --count->second == 0) {
      sessions_per_group_.erase(count);
    }
  } else {
    auto count = sessions_per_uid_.find(live->tenant.uid());
    if (count != sessions_per_uid_.end() && --count->second == 0) sessions_per_uid_.erase(count);
  }
  return live;
}

void RuntimeService::Release(Live& live, const std::string& reason) {
  // Released now, as if the process had died; its stream ends right after.
  runtime_.CloseSession(live.id);
  live.Cancel(pool_);
  spdlog::info("session {} ended by acld: {}", live.id, reason);
}

void RuntimeService::CutOff(Live& live) {
  live.Cancel(pool_);
  if (cut_connections_) cut_connections_(live.Process());
}

void RuntimeService::CutStuck(const std::vector<std::shared_ptr<Live>>& ended,
                              absl::Time deadline) {
  for (const auto& live : ended) {
    bool returned;
    {
      absl::MutexLock lock(&live->mu);
      live->mu.AwaitWithDeadline(absl::Condition(&live->context_gone), deadline);
      returned = live->context_gone;
    }
    if (returned || !cut_connections_) continue;
    spdlog::info("session {}: its process does not read; closing its connection", live->id);
    cut_connections_(live->Process());
  }
}

absl::Status RuntimeService::EndSession(SessionId session, const std::string& reason) {
  std::shared_ptr<Live> live;
  {
    absl::MutexLock lock(&mu_);
    live = Forget(session);
  }
  if (live == nullptr) return absl::NotFoundError(absl::StrCat("no session ", session));
  ServerMessage ended;
  ended.mutable_session_ended()->set_reason(reason);
  live->writer->Write(ended);
  // The notice goes out before the stream is cancelled, unless the client
  // does not read at all. No lock is held meanwhile.
  live->writer->Flush(absl::Milliseconds(500));
  Release(*live, reason);
  CutStuck({live}, absl::Now() + absl::Milliseconds(200));
  return absl::OkStatus();
}

uint32_t RuntimeService::EndGroupSessions(const QuotaGroup& group, const std::string& reason) {
  std::vector<SessionId> members;
  std::vector<std::shared_ptr<Live>> ending;
  {
    // Admit refuses a retired group under this lock: no session of it opens
    // after this list is made.
    absl::MutexLock lock(&mu_);
    for (const auto& [id, live] : live_) {
      if (live->group.get() == &group) members.push_back(id);
    }
    for (SessionId id : members) ending.push_back(Forget(id));
  }
  EndSessions(ending, reason, absl::Milliseconds(500));
  return static_cast<uint32_t>(ending.size());
}

void RuntimeService::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void RuntimeService::EndAllSessions(const std::string& reason, absl::Duration flush) {
  std::vector<std::shared_ptr<Live>> ending;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, live] : live_) ending.push_back(std::move(live));
    live_.clear();
    sessions_per_uid_.clear();
    sessions_per_group_.clear();
  }
  EndSessions(ending, reason, flush);
}

void RuntimeService::EndSessions(const std::vector<std::shared_ptr<Live>>& ending,
                                 const std::string& reason, absl::Duration flush) {
  ServerMessage ended;
  ended.mutable_session_ended()->set_reason(reason);
  for (const auto& live : ending) live->writer->Write(ended);
  // One deadline for all: clients that do not read cost the shutdown `flush`
  // once, not once each.
  const absl::Time deadline = absl::Now() + flush;
  for (const auto& live : ending) {
    live->writer->Flush(std::max(absl::ZeroDuration(), deadline - absl::Now()));
  }
  for (const auto& live : ending) Release(*live, reason);
  CutStuck(ending, absl::Now() + absl::Milliseconds(200));
}

std::map<SessionId, RuntimeService::SessionUsage> RuntimeService::usage() const {
  std::vector<std::shared_ptr<Live>> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, live] : live_) sessions.push_back(live);
  }
  std::map<SessionId, SessionUsage> usage;
  for (const auto& live : sessions) {
    std::shared_ptr<const SessionHandler> handler;
    {
      absl::MutexLock lock(&live->mu);
      handler = live->handler.lock();
    }
    if (handler == nullptr) continue;
    SessionUsage& entry = usage[live->id];
    entry.host_memory_bytes = handler->shared_memory().mapped_bytes();
    entry.host_memory_segments = static_cast<uint32_t>(handler->shared_memory().segment_count());
    entry.waiting_calls = static_cast<uint32_t>(handler->waiting_calls());
    if (live->ring != nullptr) entry.channel_bytes = RingChannel::RegionBytes();
    if (live->writer != nullptr) entry.outbound_bytes = live->writer->queued_bytes();
    if (live->ring != nullptr) entry.inbound_bytes = live->ring->inbound_bytes();
    entry.protocol_version = live->protocol_version;
  }
  return usage;
}

uint32_t RuntimeService::max_waiting_calls() { return SessionHandler::max_waiting_calls(); }

RuntimeService::Counts RuntimeService::counts() const {
  Counts counts;
  counts.hello_timeouts = hello_deadlines_.fired();
  counts.command_lines_waiting = static_cast<uint32_t>(command_reader_.unanswered());
  absl::MutexLock lock(&mu_);
  counts.sessions = static_cast<uint32_t>(live_.size());
  counts.pending = pending_;
  counts.pending_by_tenant = pending_by_tenant_.all();
  counts.closing = handlers_ - std::min<uint32_t>(handlers_, counts.sessions);
  counts.refused = refused_;
  return counts;
}

}  // namespace acld::server
