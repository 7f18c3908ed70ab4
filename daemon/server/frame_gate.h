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
// One thread serves every connection. A connection holds a buffer each way
// of at most kBufferBytes while bytes pass, none while idle.
#ifndef ACLD_DAEMON_SERVER_FRAME_GATE_H_
#define ACLD_DAEMON_SERVER_FRAME_GATE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
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
  };
  static constexpr size_t kBufferBytes = 64 << 10;

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

 private:
  struct Link;
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
  // bytes up to the next stream that must wait its turn. False: cut.
  bool Approve(Link& link);
  // How long the next stream of `key` waits for its turn (zero: none); the
  // turn is its own from then on.
  absl::Duration TakeStream(const BucketKey& key);
  void ForgetFullBuckets();
  void Watch(Link& link);
  void Close(Link& link);

  const Options options_;
  const int epoll_fd_;
  const int wake_fd_;  // an eventfd: new links, or stop
  mutable absl::Mutex mu_;
  std::map<Link*, std::unique_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);
  std::vector<Link*> incoming_ ABSL_GUARDED_BY(mu_);  // made by Interpose, not watched yet
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<BucketKey, Bucket> buckets_;  // the loop's thread only
  absl::Time buckets_swept_ = absl::InfinitePast();
  RateLimitedLog cut_log_;
  std::atomic<uint64_t> cut_{0};
  std::atomic<uint64_t> delayed_{0};
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_FRAME_GATE_H_
