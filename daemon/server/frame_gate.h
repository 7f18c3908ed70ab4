// In front of gRPC on the runtime sockets: each accepted connection is
// relayed through a socketpair whose other end gRPC serves, and the gate
// reads the HTTP/2 frame headers the client sends on the way.
//
// Why: gRPC 1.51 (Debian 12's) keeps a call for every stream a client opens,
// even one the client resets at once, until acld's handler has taken it. A
// client opening and resetting streams in a loop ("rapid reset") took acld
// to 5 GB in 10 s and kept its CPUs busy for minutes after; acld's handler
// sees each stream too late to bound that. The gate bounds the streams a
// connection opens (its HEADERS frames): at most max_streams_per_connection
// (a client of acld opens one, and one per retry while acld tells it to come
// back), and at most streams_per_second for all of a uid's connections to
// one socket together, after a burst. A connection past its count is closed;
// a stream over its uid's rate waits its turn (the gate stops reading its
// connection until then), so a user's many processes starting at once are
// slowed, never refused.
//
// gRPC also keeps what arrives of a request (a gRPC message: a 5-byte
// prefix with its length, then its bytes, in DATA frames) until its last
// byte, and checks the largest request it accepts only then: one user's
// unfinished requests on many connections could take all the memory gRPC
// may have (--max_grpc_memory_bytes), and the other users' gRPC requests
// could then be refused. The gate reads each request's length as its prefix
// passes: a request longer than max_request_bytes closes its connection, and
// a uid's requests still arriving on all its connections to one socket
// together are charged at most max_arriving_bytes_per_uid (a request that
// would pass it waits, first come first served, its connection unread, until
// the uid's others have arrived; a uid with none arriving may always start
// one). Per socket, as the stream rate: each quota group has its own socket,
// and a pod's processes may run as any uid, so one group's requests never
// wait for another's of the same uid. gRPC
// keeps whole the buffers it read from the socket while a request arrives,
// not only the request's bytes (one-byte DATA frames, each beside a frame
// gRPC ignores, held 150 MB for a 16 MiB request: docs/security.md), so a
// request is charged ChargeOf(its length), and its connection is closed if
// it sends more than that before the request has arrived.
//
// One thread serves every connection. A connection holds a buffer each way
// of at most kBufferBytes while bytes pass, none while idle.
#ifndef ACLD_DAEMON_SERVER_FRAME_GATE_H_
#define ACLD_DAEMON_SERVER_FRAME_GATE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/server/log_limiter.h"

namespace acld::server {

class FrameGate {
 public:
  struct Options {
    uint32_t max_streams_per_connection = 1024;
    double streams_per_second = 200;  // per uid and socket, sustained
    uint32_t stream_burst = 1024;     // per uid and socket, at once
    uint64_t max_request_bytes = 0;            // 0: none
    uint64_t max_arriving_bytes_per_uid = 0;   // per uid and socket; 0: none
  };
  static constexpr size_t kBufferBytes = 64 << 10;
  // Buffers a connection gave back kept for the next (at most this many).
  static constexpr size_t kSpareBuffers = 8;

  // What a request of `length` bytes is charged while it arrives: the bytes
  // its connection may send meanwhile (its own, frame headers, anything else).
  static constexpr uint64_t ChargeOf(uint64_t length) {
    return length == 0 ? 0 : length + length / 8 + (64 << 10);
  }

  static absl::StatusOr<std::unique_ptr<FrameGate>> Start(Options options);
  // Stops the thread and closes every connection it relays.
  ~FrameGate();

  // The two ends a connection is relayed through (a socketpair); false
  // (errno set) when none could be made. Made before the connection is
  // accepted: a daemon out of descriptors leaves it queued.
  static bool MakeEnds(int ends[2]);
  // Relays `client` (a connected stream socket), whose peer is `uid`, that
  // came in through `socket` (any tag: the rate is per uid and socket),
  // through `ends` (from MakeEnds). The gate owns `client` and ends[0] from
  // now on; returns ends[1], the end gRPC is to serve (the caller owns it),
  // or -1 with all three closed when the gate no longer runs.
  int Interpose(int client, uid_t uid, const void* socket, const int ends[2]);

  // Connections relayed now.
  size_t connections() const;
  // Connections closed for opening more than max_streams_per_connection.
  uint64_t connections_cut() const { return cut_.load(std::memory_order_relaxed); }
  // Streams that waited for their uid's rate.
  uint64_t streams_delayed() const { return delayed_.load(std::memory_order_relaxed); }
  // Requests that waited for their uid's others to arrive.
  uint64_t requests_delayed() const { return requests_delayed_.load(std::memory_order_relaxed); }
  // What requests arriving now (announced by their prefixes, not all here
  // yet) are charged (ChargeOf), by uid; uids with none are left out.
  std::map<uid_t, uint64_t> ArrivingBytes() const;

 private:
  struct Link;
  struct Request;
  using Spares = std::vector<std::unique_ptr<char[]>>;
  using BucketKey = std::pair<const void*, uid_t>;
  struct Bucket {
    double tokens = 0;  // below 0: streams waiting for their turn
    absl::Time refilled;
  };

  FrameGate(Options options, int epoll_fd, int wake_fd);
  void Loop();
  // Takes the links Interpose made into the epoll set (the loop's thread
  // alone touches a link once it runs).
  void Register();
  // Moves what can move on `link`; false once it is to be closed. `more`:
  // it stopped with more to move (its turn ended).
  bool Pump(Link& link, bool* more);
  // Reads the client's frame headers past what was approved; approves
  // bytes up to the next stream or request that must wait its turn. False:
  // cut.
  bool Approve(Link& link);
  // Passes the bytes of gRPC messages in the DATA frame at hand (counting
  // them to their request); false once the link is cut or waits.
  bool PassData(Link& link, bool* cut);
  // Watches gRPC's frame headers for the ends of streams.
  void WatchReplies(Link& link);
  // A request of `bytes` starts arriving on `link`: counted to its uid (on its
  // socket), or
  // the link waits in its uid's queue for the others to arrive, or it is cut
  // (it holds a request arriving itself: no client of acld starts another
  // before one has arrived, and waiting for itself it would wait for ever).
  enum class Room { kTaken, kWait, kCut };
  Room Reserve(Link& link, uint64_t bytes);
  // What `request` was counted goes back to its uid: the first link waiting
  // for room gets its turn.
  void Settle(Link& link, Request& request);
  void WakeFirstWaiting(const BucketKey& key);
  // Takes `link` out of its uid's queue (closed, or the stream it waited on
  // ended); the next gets its turn.
  void StopWaitingForBytes(Link& link);
  // The stream ended (either side): its request arrives no more.
  void EndStream(Link& link, uint32_t stream);
  // How long the next stream of `key` waits for its turn (zero: none); the
  // turn is its own from then on.
  absl::Duration TakeStream(const BucketKey& key);
  void ForgetFullBuckets();
  void CountCut() { cut_.fetch_add(1, std::memory_order_relaxed); }
  void Watch(Link& link);
  void Close(Link& link);

  const Options options_;
  const int epoll_fd_;
  const int wake_fd_;  // an eventfd: new links, or stop
  mutable absl::Mutex mu_;
  std::map<Link*, std::unique_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);
  std::vector<Link*> incoming_ ABSL_GUARDED_BY(mu_);  // made by Interpose, not watched yet
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<BucketKey, uint64_t> arriving_ ABSL_GUARDED_BY(mu_);  // no zeros
  // The loop's thread only, from here on.
  std::map<BucketKey, Bucket> buckets_;
  // Links whose next request waits for room, by uid, first come first served.
  std::map<BucketKey, std::deque<Link*>> waiting_for_bytes_;
  std::set<Link*> again_;  // to be pumped again without an event
  Spares spares_;
  absl::Time buckets_swept_ = absl::InfinitePast();
  RateLimitedLog cut_log_;
  std::atomic<uint64_t> cut_{0};
  std::atomic<uint64_t> delayed_{0};
  std::atomic<uint64_t> requests_delayed_{0};
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_FRAME_GATE_H_
