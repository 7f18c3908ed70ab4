// The client processes' sessions, served from a fixed set of threads however
// many there are. A session opens on the identity socket with its
// shared-memory channel (OpenDirect, protocol 4: no gRPC in the client at
// all), or on the runtime socket's gRPC Session stream (the fallback, and
// clients of protocols 1 to 3). A stream is a gRPC callback reactor (no
// thread waits on it); every channel is served by the channel pool
// (channel_pool.h); messages out go through the session's writer
// (session_writer.h), which never blocks the thread that writes.
#ifndef ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
#define ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/quota_group.h"
#include "daemon/core/runtime.h"
#include "daemon/core/tenant.h"
#include "daemon/server/channel_pool.h"
#include "daemon/server/command_reader.h"
#include "daemon/server/hello_deadlines.h"
#include "daemon/server/long_calls.h"
#include "daemon/server/tenant_waiting_calls.h"
#include "daemon/server/log_limiter.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/message_budget.h"
#include "daemon/server/segment_budget.h"
#include "daemon/server/session_writer.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld::server {

class SessionHandler;
class SessionRing;

// How much of acld one tenant may take (daemon flags of the same names).
struct SessionLimits {
  uint32_t max_sessions = 1024;         // --max_sessions
  uint32_t max_sessions_per_uid = 256;  // --max_sessions_per_uid
  // A quota group's cap unless it has its own (--max_sessions_per_group).
  uint32_t max_sessions_per_group = 64;
  uint32_t max_pending_hellos = 128;    // --max_pending_hellos: streams not past Hello yet
  // The same for one uid's (or quota group's) streams (--max_pending_hellos_per_uid):
  // one user's silent connections must not keep everyone else's out.
  uint32_t max_pending_hellos_per_uid = 16;
  // Connections one uid may hold open on one runtime socket (the host's or a
  // quota group's), a session or not (--max_connections_per_uid; 0: none).
  uint32_t max_connections_per_uid = 512;
  absl::Duration hello_timeout = absl::Seconds(10);    // --hello_timeout
  uint64_t max_host_memory_per_session = 16ull << 30;  // --max_host_memory_per_session
  uint32_t max_host_segments_per_session = 4096;       // shared memory segments (not a flag)
  // Segments of all sessions of a uid (or quota group), and of all sessions:
  // --max_host_segments_per_uid, --max_host_segments (0: none).
  uint64_t max_host_segments_per_uid = 8192;
  uint64_t max_host_segments = 0;
  // Messages waiting for a client that does not read (--max_queued_bytes_per_session).
  uint64_t max_queued_bytes_per_session = 64ull << 20;
  // Bytes of messages all sessions of a uid (or quota group) hold together:
  // requests arriving in fragments and messages waiting to go out
  // (--max_message_bytes_per_uid; 0: none).
  uint64_t max_message_bytes_per_uid = 1ull << 30;
  // What each session holds each way before that budget is charged (not a
  // flag): its replies and ordinary requests go through whatever its user's
  // other sessions hold (message_budget.h).
  uint64_t message_bytes_allowance = 1ull << 20;
  // Memory gRPC may take for the runtime socket's connections, requests it
  // is still receiving above all (--max_grpc_memory_bytes; 0: none).
  uint64_t max_grpc_memory_bytes = 1ull << 30;
  // Of it, what the requests still arriving on one uid's connections may
  // hold together (--max_grpc_arriving_bytes_per_uid; 0: none; frame_gate.h).
  uint64_t max_grpc_arriving_bytes_per_uid = 64ull << 20;
  // Threads serving every session's shared-memory channel (--channel_threads;
  // 0: ChannelPool::DefaultThreads()).
  int channel_threads = 0;
};

// Where a session came in: the host's sockets, or a quota group's
// (quota_groups.h). Its desk vouched for the process's identity and redeems
// its shared memory tickets; the group, if any, holds it to its limits.
struct Entrance {
  std::shared_ptr<PeerCredentialDesk> desk;  // null only in tests without identities
  std::shared_ptr<QuotaGroup> group;
};

// The Session stream is served as raw bytes, so that acld checks a request's
// shape before protobuf parses it (message_shape.h).
class RuntimeService final
    : public acl::v1::Runtime::WithRawCallbackMethod_Session<acl::v1::Runtime::Service> {
 public:
  // `peers` vouches for client identities (may be null in tests: the client's
  // own word is taken then).
  RuntimeService(Runtime& runtime, PeerCredentialDesk* peers, SessionLimits limits = {});

  ~RuntimeService() override;

  // Opens a session on the client's Hello (within the hello timeout, under
  // the session caps), serves its calls in order, and reaps the session when
  // the stream ends for any reason.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

  // Opens the session of the process that handed over `channel` on the
  // identity socket ("S", PeerCredentialDesk's SessionOpener). Its
  // SessionOpened goes into the channel; the returned function takes the
  // connection, whose end (the process closed it or exited) ends the
  // session, and which acld closes once the session is over. A refusal
  // carries an ACL code (ACL_ERROR_RT_OVER_LIMIT over a cap).
  // `entrance` is where the channel came in (none: the host's desk).
  absl::StatusOr<std::function<void(UniqueFd)>> OpenDirect(const PeerCredentials& peer,
                                                           uint32_t protocol_version,
                                                           ReceivedMemory channel,
                                                           const Entrance* entrance = nullptr);

  // Ends `session` now: its process is told `reason` (waiting at most 500 ms
  // for the notice to go out, holding no lock), its stream is cancelled and
  // the runtime releases everything it held. NotFound when not live.
  absl::Status EndSession(SessionId session, const std::string& reason);

  // How to cut the connections of a session's process at the socket
  // (DaemonServer: the acceptors' ShutdownConnections). Used for a session
  // acld ended whose handler is still stuck writing to a process that does
  // not read.
  using ConnectionCutter = std::function<void(const PeerCredentials& process)>;
  void SetConnectionCutter(ConnectionCutter cut) { cut_connections_ = std::move(cut); }

  // The quota group whose socket a gRPC call's connection came in through
  // (DaemonServer: which acceptor accepted it); none: the host's. Any other
  // connection is the host's: its token must then be the host desk's, which
  // a process that reaches only a group's directory cannot have. Set before
  // sessions start.
  using EntranceFinder =
      std::function<std::optional<Entrance>(grpc::CallbackServerContext* context)>;
  void SetEntranceFinder(EntranceFinder find) { find_entrance_ = std::move(find); }
  // The uid that connected a gRPC call's connection (DaemonServer: the
  // runtime acceptor's SO_PEERCRED at accept time, or a quota group's
  // socket's); none when unknown. Until its Hello that is all acld knows of
  // a stream's sender; at the Hello, the token's uid must be it. Set before
  // sessions start.
  using PeerUidFinder =
      std::function<std::optional<uint32_t>(grpc::CallbackServerContext* context)>;
  void SetPeerUidFinder(PeerUidFinder find) { find_peer_uid_ = std::move(find); }

  // Ends every session of `group` with `reason` (the group was deleted, and
  // retired first: Admit refuses it from then on). Returns how many.
  uint32_t EndGroupSessions(const QuotaGroup& group, const std::string& reason);

  // Refuses new sessions from now on.
  void StopAccepting();
  // Ends every live session with `reason`: every notice is queued at once,
  // then all are given `flush` together (not each) to go out.
  void EndAllSessions(const std::string& reason, absl::Duration flush = absl::Milliseconds(500));

  struct Counts {
    uint32_t sessions = 0;
    uint32_t pending = 0;         // streams waiting for Hello
    std::map<Tenant, uint64_t> pending_by_tenant;
    uint32_t closing = 0;         // sessions ended whose handler has not returned yet
    uint64_t refused = 0;         // over a cap, no valid token, shutting down
    uint64_t hello_timeouts = 0;  // streams cancelled for want of a Hello
    uint32_t command_lines_waiting = 0;  // sessions' command lines not read yet
  };
  Counts counts() const;
  const SessionLimits& limits() const { return limits_; }
  // Shared memory segments mapped for each tenant and in all (for aclctl).
  const SegmentBudget& segments() const { return *segments_; }
  const MessageBudget& messages() const { return *messages_; }

  // What a live session holds in this layer rather than in the runtime (for
  // aclctl): its mapped shared memory and its calls waiting in the core.
  struct SessionUsage {
    uint64_t host_memory_bytes = 0;
    uint32_t host_memory_segments = 0;
    uint32_t waiting_calls = 0;
    uint64_t channel_bytes = 0;  // its shared-memory channel (0: on the gRPC stream)
    uint64_t outbound_bytes = 0;  // messages waiting for its process to read them
    uint64_t inbound_bytes = 0;   // a request of its arriving in fragments
    uint32_t protocol_version = 0;  // its client's
  };
  // Every live session's whose handler still runs.
  std::map<SessionId, SessionUsage> usage() const;
  // The cap on a session's waiting calls (SessionHandler's).
  static uint32_t max_waiting_calls();

 private:
  class SessionCall;
  class RingTurn;
  class HangupWatch;

  // A live session as the service sees it. `context` (its gRPC call, null
  // for a session opened on the identity socket) is valid until the call is
  // done (`context_gone`); Cancel() checks under `mu`.
  struct Live {
    SessionId id = 0;
    uint32_t uid = 0;
    pid_t pid = 0;
    uint64_t start_ticks = 0;  // its process's (PeerCredentials), 0 if unknown
    uint32_t protocol_version = 0;  // its client's (proto/acl/protocol.h)
    PeerCredentials Process() const { return PeerCredentials{pid, uid, 0, start_ticks}; }
    std::shared_ptr<QuotaGroup> group;  // its caps count it per group, not per uid
    // Whom its limits charge: its group, else its uid or the owner of the
    // subordinate range its uid is in (uid_owners.h), fixed at the open.
    Tenant tenant;
    grpc::CallbackServerContext* context = nullptr;
    // A session opened on the identity socket: what Cancel() runs to end it
    // (its connection plays the stream's part, direct_sessions.cc).
    std::function<void()> end_direct ABSL_GUARDED_BY(mu);
    std::shared_ptr<SessionWriter> writer;
    std::shared_ptr<SessionRing> ring;  // the session's channel, if it has one
    absl::Mutex mu;
    bool context_gone ABSL_GUARDED_BY(mu) = false;
    bool cancelled ABSL_GUARDED_BY(mu) = false;
    // What the channel pool runs for the channel, and its id there (0: none).
    std::shared_ptr<RingTurn> turn ABSL_GUARDED_BY(mu);
    uint64_t pool_id ABSL_GUARDED_BY(mu) = 0;
    std::weak_ptr<const SessionHandler> handler ABSL_GUARDED_BY(mu);  // for usage()
    // A direct session's connection and handler until it ends (EndDirect).
    std::shared_ptr<const UniqueFd> connection ABSL_GUARDED_BY(mu);
    std::shared_ptr<SessionHandler> direct_handler ABSL_GUARDED_BY(mu);
    uint64_t hangup_id ABSL_GUARDED_BY(mu) = 0;  // its watch in the pool
    bool direct_ended ABSL_GUARDED_BY(mu) = false;

    // Ends the stream (its call then reaps the session) and the channel's turns.
    void Cancel(ChannelPool& pool);
  };

  // What a Hello opens: the session, or why not.
  struct Opened {
    std::shared_ptr<Live> live;
    std::shared_ptr<SessionHandler> handler;
  };
  // Checks `request` (a Hello), the client's identity and the caps, and opens
  // its session; a refusal is counted and logged.
  // `entrance`: where the stream's connection came in (EntranceOf).
  absl::StatusOr<Opened> Open(const acl::v1::ClientMessage& request, const Entrance& entrance,
                              grpc::CallbackServerContext* context,
                              std::shared_ptr<SessionWriter::Carrier> stream);
  // The caps, then the session of `peer` with its first carrier (the
  // stream, or the channel of a direct session); a refusal is counted and
  // logged, its code a gRPC one. A session of a group counts against the
  // group's caps instead of its uid's.
  absl::StatusOr<Opened> Admit(const PeerInfo& peer, uint32_t protocol_version,
                               const Entrance& entrance, std::shared_ptr<SessionRing> ring,
                               grpc::CallbackServerContext* context,
                               std::shared_ptr<SessionWriter::Carrier> first_carrier);
  // The host's entrance: its desk, no group.
  Entrance HostEntrance() const;
  // What the kernel says of a process: its identity, start time and name
  // (its command line comes later: ShowCommandLineOnceRead).
  PeerInfo PeerFromKernel(const PeerCredentials& credentials);
  // The session of a process the kernel named shows its command line, read
  // on command_reader_'s threads (fairly between tenants: the session's
  // quota group, else its uid), in place of its name once read.
  void ShowCommandLineOnceRead(const Live& live, const PeerInfo& peer);
  // A direct session ends (once): reaped, then its connection closed.
  void EndDirect(const std::shared_ptr<Live>& live);
  // Takes a direct session's connection once its "O" went out.
  void AttachConnection(const std::shared_ptr<Live>& live, UniqueFd connection);
  // Puts an open session's channel in the pool (after its SessionOpened).
  void ServeChannel(const std::shared_ptr<Live>& live, std::shared_ptr<SessionHandler> handler);
  // The stream ended: the runtime releases the session (on a pool thread;
  // the runtime may take a while), then `finish` ends the call.
  void Reap(std::shared_ptr<Live> live, std::shared_ptr<SessionHandler> handler,
            std::function<void()> finish);
  // The call is done: its context is gone.
  void CallDone(const std::shared_ptr<Live>& live);
  // Refuses a stream: counted, logged (rate-limited), returned.
  grpc::Status Refuse(grpc::StatusCode code, const std::string& message);
  // The same, for Open and Admit, whose callers convert it for their carrier.
  absl::Status RefuseOpen(grpc::StatusCode code, const std::string& message);
  // Where a gRPC call's connection came in: a quota group's socket
  // (find_entrance_), else the host's.
  Entrance EntranceOf(grpc::CallbackServerContext* context) const;
  // Whose a stream is before its Hello: the quota group of its `entrance`,
  // else the uid that connected; none when its connection is not one the
  // acceptor holds (uid -1 when no acceptor finds uids: tests).
  std::optional<Tenant> PendingTenantOf(const Entrance& entrance,
                                        grpc::CallbackServerContext* context) const;
  // A stream past a pending-Hello cap (all streams', or its tenant's) is
  // refused with the reason; else it counts as pending until Hello.
  std::optional<std::string> AdmitPending(const Tenant& tenant);
  void EndPending(const Tenant& tenant);
  // Takes `session` out of the live table (if still there).
  std::shared_ptr<Live> Forget(SessionId session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases a session taken out of the table by acld: the runtime drops it,
  // its stream is cancelled.
  void Release(Live& live, const std::string& reason);
  // Ends sessions taken out of the table: every notice is queued at once,
  // then all are given `flush` together to go out, then they are released.
  void EndSessions(const std::vector<std::shared_ptr<Live>>& ending, const std::string& reason,
                   absl::Duration flush);
  // Cancels `live`'s stream and cuts its process's connections now.
  void CutOff(Live& live);
  // Waits until `deadline` for the handlers of `ended` to return; cuts the
  // connections of those still stuck (writing to a process that does not read).
  void CutStuck(const std::vector<std::shared_ptr<Live>>& ended, absl::Time deadline);

  Runtime& runtime_;
  PeerCredentialDesk* const peers_;
  const SessionLimits limits_;
  const std::shared_ptr<SegmentBudget> segments_;
  const std::shared_ptr<MessageBudget> messages_;
  ConnectionCutter cut_connections_;
  EntranceFinder find_entrance_;
  PeerUidFinder find_peer_uid_;
  HelloDeadlines hello_deadlines_;
  RateLimitedLog refusals_{"refused sessions"};
  RateLimitedLog channel_faults_{"session channel faults"};
  mutable absl::Mutex mu_;
  std::map<SessionId, std::shared_ptr<Live>> live_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, uint32_t> sessions_per_uid_ ABSL_GUARDED_BY(mu_);  // outside groups
  std::map<const QuotaGroup*, uint32_t> sessions_per_group_ ABSL_GUARDED_BY(mu_);
  uint32_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  TenantTally pending_by_tenant_ ABSL_GUARDED_BY(mu_);
  uint32_t handlers_ ABSL_GUARDED_BY(mu_) = 0;  // sessions whose handler runs
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  CommandReader command_reader_;
  const std::shared_ptr<TenantWaitingCalls> tenant_waiting_ =
      std::make_shared<TenantWaitingCalls>();
  // Its thread runs sessions' long calls (binary loads), which use the above.
  LongCalls long_calls_;
  // Last: its threads run sessions' turns and reaps, which use the above
  // (and hand long calls over).
  ChannelPool pool_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
