#include "daemon/server/frame_gate.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

constexpr size_t kPrefaceBytes = 24;  // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
constexpr size_t kFrameHeaderBytes = 9;
constexpr uint8_t kHeadersFrame = 0x1;
// Reads and writes a connection makes in one turn before the others' turns:
// a bulk transfer does not keep the thread from everyone else.
constexpr int kRoundsPerTurn = 16;
// How often buckets that have filled up again (as good as new) are forgotten.
constexpr absl::Duration kBucketSweep = absl::Seconds(10);
// Once gRPC's end has ended, how long the client's has to take what gRPC
// sent before it is closed anyway.
constexpr absl::Duration kDrainTime = absl::Seconds(5);

// A clock that never steps back (turns and rates are about elapsed time).
absl::Time Now() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

// One direction's bytes: read in at `end`, written out from `begin`. Its
// memory is taken when bytes come and given back once they went (Release).
struct Buffer {
  std::unique_ptr<char[]> bytes;
  size_t begin = 0;
  size_t end = 0;
  // Kept while the memory is given back: the start of a frame header.
  char tail[kFrameHeaderBytes];
  size_t tail_bytes = 0;

  size_t room() const { return FrameGate::kBufferBytes - end; }
  bool empty() const { return begin == end; }
  char* at(size_t offset) const { return bytes.get() + offset; }
  // Where the next bytes read go (the memory taken back first).
  char* Writable() {
    if (bytes == nullptr) {
      bytes.reset(new char[FrameGate::kBufferBytes]);
      std::memcpy(bytes.get(), tail, tail_bytes);
      end = tail_bytes;
      tail_bytes = 0;
    }
    return at(end);
  }
  // Moves what is still to go to the front; `mark` (an offset at or past
  // begin) moves with it.
  void Compact(size_t* mark = nullptr) {
    if (begin == 0) return;
    if (begin < end) std::memmove(at(0), at(begin), end - begin);
    if (mark != nullptr) *mark -= begin;
    end -= begin;
    begin = 0;
  }
  // Gives the memory back once everything before `mark` (an offset; null:
  // the end) went and what is left is less than a frame header, kept aside:
  // an idle connection holds none.
  void Release(size_t* mark = nullptr) {
    const size_t from = mark != nullptr ? *mark : end;
    if (bytes == nullptr || begin != from || end - from > sizeof(tail)) return;
    tail_bytes = end - from;
    std::memcpy(tail, at(from), tail_bytes);
    bytes.reset();
    begin = end = 0;
    if (mark != nullptr) *mark = 0;
  }
};

enum class Io { kMoved, kWouldBlock, kEnd, kFailed };

Io ReadInto(int fd, Buffer& buffer) {
  buffer.Compact();
  char* into = buffer.Writable();
  if (buffer.room() == 0) return Io::kWouldBlock;
  const ssize_t n = read(fd, into, buffer.room());
  if (n > 0) {
    buffer.end += static_cast<size_t>(n);
    return Io::kMoved;
  }
  if (n == 0) return Io::kEnd;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Io::kWouldBlock
                                                                     : Io::kFailed;
}

Io WriteFrom(int fd, Buffer& buffer, size_t until) {
  if (buffer.begin >= until) return Io::kWouldBlock;
  const ssize_t n =
      send(fd, buffer.at(buffer.begin), until - buffer.begin, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    buffer.begin += static_cast<size_t>(n);
    return Io::kMoved;
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? Io::kWouldBlock
                                                                              : Io::kFailed;
}

}  // namespace

struct FrameGate::Link {
  // What an epoll event names: one of the link's two sockets.
  struct Side {
    Link* link;
    bool client;
  };

  int client = -1;
  int inner = -1;  // the gate's end of the socketpair gRPC serves
  BucketKey bucket;
  Buffer from_client;
  Buffer to_client;
  // from_client's bytes [begin, approved) may go to gRPC; the frame headers
  // past it are still to be read.
  size_t approved = 0;
  size_t preface_left = kPrefaceBytes;
  uint64_t payload_left = 0;  // of the frame whose header was approved last
  uint32_t streams = 0;
  // The next stream waits for its uid's rate until then (InfinitePast: it
  // need not); `turn_taken`: its turn was counted, it goes at resume_at.
  absl::Time resume_at = absl::InfinitePast();
  bool turn_taken = false;
  bool client_ended = false;  // the client sends no more
  bool inner_ended = false;   // gRPC sends no more
  bool inner_shut = false;    // told gRPC the client sends no more
  // gRPC's end ended or hung up: the link closes once what gRPC sent reached
  // the client, or at this time.
  absl::Time close_by = absl::InfiniteFuture();
  // In the epoll set (a side that hung up is taken out: its end is read
  // when the link is pumped for the other side, until it reads as ended).
  bool client_watched = false;
  bool inner_watched = false;
  bool closed = false;
  uint32_t client_events = 0;  // what epoll watches now
  uint32_t inner_events = 0;
  Side client_side{this, true};
  Side inner_side{this, false};

  bool waiting(absl::Time now) const { return resume_at != absl::InfinitePast() && resume_at > now; }
  // When the loop must come back to it without an event (InfiniteFuture: never).
  absl::Time wake_at() const {
    return resume_at != absl::InfinitePast() ? std::min(resume_at, close_by) : close_by;
  }
  void Draining(absl::Time now) {
    if (close_by == absl::InfiniteFuture()) close_by = now + kDrainTime;
  }
};

absl::StatusOr<std::unique_ptr<FrameGate>> FrameGate::Start(Options options) {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::InternalError(absl::StrCat("epoll: ", std::strerror(errno)));
  const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.ptr = nullptr;
  if (wake_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &wake) != 0) {
    const std::string error = std::strerror(errno);
    if (wake_fd >= 0) close(wake_fd);
    close(epoll_fd);
    return absl::InternalError(absl::StrCat("frame gate: ", error));
  }
  std::unique_ptr<FrameGate> gate(new FrameGate(options, epoll_fd, wake_fd));
  gate->thread_ = std::thread([raw = gate.get()] { raw->Loop(); });
  return gate;
}

FrameGate::FrameGate(Options options, int epoll_fd, int wake_fd)
    : options_(options),
      epoll_fd_(epoll_fd),
      wake_fd_(wake_fd),
      cut_log_("frame gate", LogLimiter::Options{/*per_second=*/0.1, /*burst=*/3}) {}

FrameGate::~FrameGate() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [raw, link] : links_) {
    if (link->closed) continue;
    close(link->client);
    close(link->inner);
  }
  links_.clear();
  close(wake_fd_);
  close(epoll_fd_);
}

bool FrameGate::MakeEnds(int ends[2]) {
  return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) == 0;
}

int FrameGate::Interpose(int client, uid_t uid, const void* socket, const int ends[2]) {
  const int pair[2] = {ends[0], ends[1]};
  const int flags = fcntl(client, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) fcntl(client, F_SETFL, flags | O_NONBLOCK);
  auto link = std::make_unique<Link>();
  link->client = client;
  link->inner = pair[0];
  link->bucket = BucketKey(socket, uid);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {  // the gate's thread is gone: nobody would relay it
      close(client);
      close(pair[0]);
      close(pair[1]);
      return -1;
    }
    incoming_.push_back(link.get());
    links_[link.get()] = std::move(link);
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));  // the loop's thread watches it from now on
  return pair[1];
}

size_t FrameGate::connections() const {
  absl::MutexLock lock(&mu_);
  return links_.size();
}

void FrameGate::Register() {
  std::vector<Link*> incoming;
  {
    absl::MutexLock lock(&mu_);
    incoming.swap(incoming_);
  }
  for (Link* link : incoming) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = &link->inner_side;
    link->inner_watched = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link->inner, &event) == 0;
    event.data.ptr = &link->client_side;
    link->client_watched = epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, link->client, &event) == 0;
    link->inner_events = link->client_events = EPOLLIN;
    if (!link->inner_watched || !link->client_watched) {
      Close(*link);  // out of memory: dropped
      absl::MutexLock lock(&mu_);
      links_.erase(link);
    }
  }
}

absl::Duration FrameGate::TakeStream(const BucketKey& key) {
  const absl::Time now = Now();
  const double rate = std::max(options_.streams_per_second, 1e-3);
  auto [it, added] = buckets_.try_emplace(key, Bucket{double(options_.stream_burst), now});
  Bucket& bucket = it->second;
  bucket.tokens = std::min<double>(
      options_.stream_burst, bucket.tokens + rate * absl::ToDoubleSeconds(now - bucket.refilled));
  bucket.refilled = now;
  // Taken now even when it must wait: the streams waiting after it wait
  // longer, each for its own turn, rather than all retrying at every token.
  // A uid's connections that come and go cannot push its turns further out
  // than a burst's worth.
  bucket.tokens = std::max(bucket.tokens - 1, -double(options_.stream_burst));
  return bucket.tokens >= 0 ? absl::ZeroDuration() : absl::Seconds(-bucket.tokens / rate);
}

void FrameGate::ForgetFullBuckets() {
  const absl::Time now = Now();
  if (now - buckets_swept_ < kBucketSweep) return;
  buckets_swept_ = now;
  const double rate = std::max(options_.streams_per_second, 1e-3);
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double tokens =
        it->second.tokens + rate * absl::ToDoubleSeconds(now - it->second.refilled);
    it = tokens >= options_.stream_burst ? buckets_.erase(it) : std::next(it);
  }
}

bool FrameGate::Approve(Link& link) {
  const absl::Time now = Now();
  if (link.waiting(now)) return true;
  link.resume_at = absl::InfinitePast();
  Buffer& in = link.from_client;
  while (link.approved < in.end) {
    const size_t available = in.end - link.approved;
    if (link.preface_left > 0) {
      const size_t skip = std::min(available, link.preface_left);
      link.preface_left -= skip;
      link.approved += skip;
      continue;
    }
    if (link.payload_left > 0) {
      const size_t skip = static_cast<size_t>(std::min<uint64_t>(available, link.payload_left));
      link.payload_left -= skip;
      link.approved += skip;
      continue;
    }
    if (available < kFrameHeaderBytes) break;  // the rest of the header is still to come
    const auto* header = reinterpret_cast<const uint8_t*>(in.at(link.approved));
    if (header[3] == kHeadersFrame) {
      if (link.streams >= options_.max_streams_per_connection) {
        cut_.fetch_add(1, std::memory_order_relaxed);
        cut_log_.Warn(
            "a connection of uid {} opened more than {} streams; it is closed (a client of "
            "acld opens one per connection)",
            link.bucket.second, options_.max_streams_per_connection);
        return false;
      }
      if (!link.turn_taken) {
        const absl::Duration wait = TakeStream(link.bucket);
        if (wait > absl::ZeroDuration()) {
          delayed_.fetch_add(1, std::memory_order_relaxed);
          link.turn_taken = true;
          link.resume_at = now + wait;
          break;
        }
      }
      link.turn_taken = false;
      ++link.streams;
    }
    link.payload_left = (uint64_t{header[0]} << 16) | (uint64_t{header[1]} << 8) | header[2];
    link.approved += kFrameHeaderBytes;
  }
  return true;
}

bool FrameGate::Pump(Link& link, bool* more) {
  *more = false;
  for (int round = 0; round < kRoundsPerTurn; ++round) {
    bool moved = false;
    // The client's bytes to gRPC, as far as their frame headers allow; none
    // read while its next stream waits for its turn.
    if (!link.client_ended && !link.waiting(Now())) {
      link.from_client.Compact(&link.approved);
      const Io read = ReadInto(link.client, link.from_client);
      if (read == Io::kFailed) return false;
      if (read == Io::kEnd) link.client_ended = true;
      moved |= read != Io::kWouldBlock;
    }
    if (!Approve(link)) return false;
    const Io to_inner = WriteFrom(link.inner, link.from_client, link.approved);
    if (to_inner == Io::kFailed) return false;
    moved |= to_inner == Io::kMoved;
    if (link.client_ended && !link.inner_shut && link.from_client.begin == link.approved &&
        link.resume_at == absl::InfinitePast()) {
      shutdown(link.inner, SHUT_WR);  // what is left (part of a header) never completes
      link.inner_shut = true;
    }
    if (!link.waiting(Now())) link.from_client.Release(&link.approved);
    // gRPC's bytes to the client, as they come.
    if (!link.inner_ended) {
      const Io read = ReadInto(link.inner, link.to_client);
      if (read == Io::kFailed) return false;
      if (read == Io::kEnd) {
        link.inner_ended = true;
        link.Draining(Now());
      }
      moved |= read != Io::kWouldBlock;
    }
    const Io to_client = WriteFrom(link.client, link.to_client, link.to_client.end);
    if (to_client == Io::kFailed) return false;
    moved |= to_client == Io::kMoved;
    link.to_client.Release();
    // gRPC is done with the connection: so is the client, once it has what
    // gRPC sent (closing tells it the end).
    if (link.inner_ended && link.to_client.empty()) return false;
    if (!moved) return true;
  }
  *more = true;
  return true;
}

void FrameGate::Watch(Link& link) {
  const bool waiting = link.waiting(Now());
  uint32_t client_events = 0;
  if (!link.client_ended && !waiting && link.from_client.room() + link.from_client.begin > 0) {
    client_events |= EPOLLIN;
  }
  if (!link.to_client.empty()) client_events |= EPOLLOUT;
  uint32_t inner_events = 0;
  if (!link.inner_ended && link.to_client.room() + link.to_client.begin > 0) {
    inner_events |= EPOLLIN;
  }
  if (link.from_client.begin < link.approved) inner_events |= EPOLLOUT;
  epoll_event event{};
  if (link.client_watched && client_events != link.client_events) {
    event.events = client_events;
    event.data.ptr = &link.client_side;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, link.client, &event) == 0) {
      link.client_events = client_events;
    }
  }
  if (link.inner_watched && inner_events != link.inner_events) {
    event.events = inner_events;
    event.data.ptr = &link.inner_side;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, link.inner, &event) == 0) {
      link.inner_events = inner_events;
    }
  }
}

void FrameGate::Close(Link& link) {
  if (link.closed) return;
  link.closed = true;
  if (link.turn_taken && link.waiting(Now())) {
    auto bucket = buckets_.find(link.bucket);  // its turn goes to the next
    if (bucket != buckets_.end()) bucket->second.tokens += 1;
  }
  if (link.client_watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.client, nullptr);
  if (link.inner_watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.inner, nullptr);
  close(link.client);
  close(link.inner);  // gRPC reads the end of its connection
  link.client = link.inner = -1;
}

void FrameGate::Loop() {
  std::vector<epoll_event> events(256);
  std::set<Link*> waiting;  // for their turns, by their uids' rate
  std::set<Link*> again;    // their turns ended with more to move
  while (true) {
    int timeout_ms = -1;
    if (!again.empty()) {
      timeout_ms = 0;
    } else if (!waiting.empty()) {
      absl::Time first = absl::InfiniteFuture();
      for (Link* link : waiting) first = std::min(first, link->wake_at());
      timeout_ms = static_cast<int>(
          std::clamp<int64_t>(absl::ToInt64Milliseconds(first - Now()) + 1, 0, 1000));
    }
    const int ready =
        epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      spdlog::critical("frame gate: epoll_wait failed: {}; gRPC connections stall",
                       std::strerror(errno));
      absl::MutexLock lock(&mu_);
      stopping_ = true;  // Interpose takes no more
      return;
    }
    std::set<Link*> touched;
    auto pump = [&](Link* link) {
      touched.insert(link);
      bool more = false;
      if (!Pump(*link, &more)) {
        Close(*link);
      } else if (more) {
        again.insert(link);
      }
    };
    for (int i = 0; i < std::max(ready, 0); ++i) {
      if (events[i].data.ptr == nullptr) {
        uint64_t count = 0;
        (void)!read(wake_fd_, &count, sizeof(count));
        {
          absl::MutexLock lock(&mu_);
          if (stopping_) return;
        }
        Register();
        continue;
      }
      const auto* side = static_cast<Link::Side*>(events[i].data.ptr);
      Link* link = side->link;
      if (link->closed) continue;
      if ((events[i].events & (EPOLLHUP | EPOLLERR)) != 0) {
        // Hung up (or failed): it would be reported at every wait. What is
        // left on its end is read as the link is pumped, until it reads as
        // ended or fails.
        const int fd = side->client ? link->client : link->inner;
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        (side->client ? link->client_watched : link->inner_watched) = false;
        if (!side->client) link->Draining(Now());
      }
      pump(link);
    }
    const absl::Time now = Now();
    std::vector<Link*> due(again.begin(), again.end());
    again.clear();
    for (Link* link : waiting) {
      if (link->wake_at() <= now) due.push_back(link);
    }
    for (Link* link : due) {
      if (link->closed) continue;
      if (link->close_by <= now) {  // the client did not take what gRPC sent in time
        touched.insert(link);
        Close(*link);
        continue;
      }
      pump(link);
    }
    std::vector<Link*> gone;
    for (Link* link : touched) {
      if (link->closed) {
        waiting.erase(link);
        again.erase(link);
        gone.push_back(link);
        continue;
      }
      Watch(*link);
      if (link->wake_at() != absl::InfiniteFuture()) {
        waiting.insert(link);
      } else {
        waiting.erase(link);
      }
    }
    if (!gone.empty()) {
      absl::MutexLock lock(&mu_);
      for (Link* link : gone) links_.erase(link);
    }
    ForgetFullBuckets();
  }
}

}  // namespace acld::server
