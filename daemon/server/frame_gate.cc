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
#include "daemon/server/client_descriptors.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

constexpr size_t kPrefaceBytes = 24;  // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
// HTTP/2 frames (RFC 9113 section 4.1): a header of 9 bytes (the payload's
// length in 24 bits, type, flags, stream in 31 bits), then the payload.
constexpr size_t kFrameHeaderBytes = 9;
constexpr uint8_t kDataFrame = 0x0;
constexpr uint8_t kHeadersFrame = 0x1;
constexpr uint8_t kResetFrame = 0x3;  // RST_STREAM
constexpr uint8_t kEndStreamFlag = 0x1;
constexpr uint8_t kPaddedFlag = 0x8;
// A gRPC message: a flag byte and its length in 4 bytes, then the bytes.
constexpr uint8_t kMessagePrefixBytes = 5;
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

struct FrameHeader {
  uint64_t length;
  uint8_t type;
  uint8_t flags;
  uint32_t stream;
};
FrameHeader ParseFrameHeader(const uint8_t* at) {
  return FrameHeader{(uint64_t{at[0]} << 16) | (uint64_t{at[1]} << 8) | at[2], at[3], at[4],
                     (uint32_t{at[5] & 0x7fu} << 24) | (uint32_t{at[6]} << 16) |
                         (uint32_t{at[7]} << 8) | at[8]};
}

// Where one direction's bytes are among its frames.
struct FrameWalk {
  size_t preface_left = 0;
  uint32_t stream = 0;           // of the frame being walked
  uint64_t skip_left = 0;        // payload passed without a look
  bool pad_length_next = false;  // a padded DATA frame: its first byte says how much padding
  uint64_t data_left = 0;        // a DATA frame's bytes of gRPC messages still to come
  uint64_t pad_left = 0;         // its padding, after them
  bool ends_stream = false;      // the frame ends its stream once its last byte passed

  bool in_frame() const {
    return preface_left > 0 || skip_left > 0 || pad_length_next || data_left > 0 || pad_left > 0;
  }
  // Passes `bytes` of what the frame skips; how many it took.
  size_t Skip(size_t bytes) {
    uint64_t& left = preface_left > 0 ? preface_left : pad_left > 0 ? pad_left : skip_left;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(bytes, left));
    left -= take;
    return take;
  }
};

// One direction's bytes: read in at `end`, written out from `begin` as far
// as `cleared` (their frames were looked at). Its memory is taken when
// bytes come and given back (to the gate's spares) once they went.
struct Buffer {
  std::unique_ptr<char[]> bytes;
  size_t begin = 0;
  size_t cleared = 0;
  size_t end = 0;
  // Kept while the memory is given back: the start of a frame header.
  char tail[kFrameHeaderBytes];
  size_t tail_bytes = 0;

  size_t room() const { return FrameGate::kBufferBytes - end; }
  bool sendable() const { return begin < cleared; }
  char* at(size_t offset) const { return bytes.get() + offset; }
  const uint8_t* unread() const { return reinterpret_cast<const uint8_t*>(at(cleared)); }
  // Where the next bytes read go (memory taken first, if it was given back).
  char* Writable(std::vector<std::unique_ptr<char[]>>& spares) {
    if (bytes == nullptr) {
      if (spares.empty()) {
        bytes.reset(new char[FrameGate::kBufferBytes]);
      } else {
        bytes = std::move(spares.back());
        spares.pop_back();
      }
      std::memcpy(bytes.get(), tail, tail_bytes);
      end = tail_bytes;
      tail_bytes = 0;
    }
    return at(end);
  }
  // Moves what is still to go to the front.
  void Compact() {
    if (begin == 0) return;
    if (begin < end) std::memmove(at(0), at(begin), end - begin);
    cleared -= begin;
    end -= begin;
    begin = 0;
  }
  // Gives the memory back once everything cleared went and what is left is
  // less than a frame header, kept aside: an idle connection holds none.
  void Release(std::vector<std::unique_ptr<char[]>>& spares) {
    if (bytes == nullptr || begin != cleared || end - cleared > sizeof(tail)) return;
    tail_bytes = end - cleared;
    std::memcpy(tail, at(cleared), tail_bytes);
    if (spares.size() < FrameGate::kSpareBuffers) {
      spares.push_back(std::move(bytes));
    } else {
      bytes.reset();
    }
    begin = cleared = end = 0;
  }
};

enum class Io { kMoved, kWouldBlock, kEnd, kFailed };

// `from_client`: the client's socket, whose descriptors (none expected) are
// taken rather than dropped by the kernel on the gate's thread
// (client_descriptors.h).
Io ReadInto(int fd, Buffer& buffer, std::vector<std::unique_ptr<char[]>>& spares,
            bool from_client) {
  buffer.Compact();
  char* into = buffer.Writable(spares);
  if (buffer.room() == 0) return Io::kWouldBlock;
  const ssize_t n =
      from_client ? ReceiveBytes(fd, into, buffer.room(), 0) : read(fd, into, buffer.room());
  if (n > 0) {
    buffer.end += static_cast<size_t>(n);
    return Io::kMoved;
  }
  if (n == 0) return Io::kEnd;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Io::kWouldBlock
                                                                     : Io::kFailed;
}

Io WriteFrom(int fd, Buffer& buffer) {
  if (!buffer.sendable()) return Io::kWouldBlock;
  const ssize_t n =
      send(fd, buffer.at(buffer.begin), buffer.cleared - buffer.begin, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    buffer.begin += static_cast<size_t>(n);
    return Io::kMoved;
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? Io::kWouldBlock
                                                                              : Io::kFailed;
}

}  // namespace

// A request arriving on one stream: its prefix, then its bytes.
struct FrameGate::Request {
  uint8_t prefix_seen = 0;  // bytes of the prefix passed
  uint64_t length = 0;      // as far as the prefix said it
  uint64_t left = 0;        // its bytes still to come, once the prefix passed
  uint64_t counted = 0;     // its charge to its uid, while it arrives
};

struct FrameGate::Link {
  // What an epoll event names: one of the link's two sockets.
  struct Side {
    Link* link;
    bool client;
  };

  int client = -1;
  int inner = -1;  // the gate's end of the socketpair gRPC serves
  BucketKey bucket;
  uid_t uid() const { return bucket.second; }
  Buffer from_client;  // cleared: approved for gRPC
  Buffer to_client;
  FrameWalk client_frames{kPrefaceBytes};
  FrameWalk grpc_frames;
  // The client's open streams (HEADERS seen, no end yet) and what arrives on them.
  std::map<uint32_t, Request> requests;
  uint32_t streams = 0;
  // The next stream waits for its uid's rate until then (InfinitePast: it
  // need not); `turn_taken`: its turn was counted, it goes at resume_at.
  absl::Time resume_at = absl::InfinitePast();
  bool turn_taken = false;
  // In its uid's queue for room for its next request, and not to be read
  // until its turn comes (no timer: room coming puts it in again_).
  bool queued_for_bytes = false;
  bool waiting_for_bytes = false;
  uint32_t last_stream = 0;  // the client's last stream opened
  // While requests are arriving on it: the bytes it may send meanwhile
  // (their charges together) and has sent since the first began.
  uint64_t charged = 0;
  uint64_t sent_while_charged = 0;
  // Approves the client's next `bytes` for gRPC.
  void Pass(size_t bytes) {
    from_client.cleared += bytes;
    if (charged > 0) sent_while_charged += bytes;
  }
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

  bool waiting_for_turn(absl::Time now) const {
    return resume_at != absl::InfinitePast() && resume_at > now;
  }
  bool waiting(absl::Time now) const { return waiting_for_bytes || waiting_for_turn(now); }
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
    CloseConnection(link->client);
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
  const int flags = fcntl(client, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) fcntl(client, F_SETFL, flags | O_NONBLOCK);
  auto link = std::make_unique<Link>();
  link->client = client;
  link->inner = ends[0];
  link->bucket = BucketKey(socket, uid);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {  // the gate's thread is gone: nobody would relay it
      CloseConnection(client);
      close(ends[0]);
      close(ends[1]);
      return -1;
    }
    incoming_.push_back(link.get());
    links_[link.get()] = std::move(link);
  }
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));  // the loop's thread watches it from now on
  return ends[1];
}

size_t FrameGate::connections() const {
  absl::MutexLock lock(&mu_);
  return links_.size();
}

std::map<uid_t, uint64_t> FrameGate::ArrivingBytes() const {
  std::map<uid_t, uint64_t> by_uid;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, bytes] : arriving_) by_uid[key.second] += bytes;
  return by_uid;
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

FrameGate::Room FrameGate::Reserve(Link& link, uint64_t bytes) {
  if (bytes == 0) return Room::kTaken;
  std::deque<Link*>& queue = waiting_for_bytes_[link.bucket];
  if (queue.empty() || queue.front() == &link) {
    bool taken = false;
    {
      absl::MutexLock lock(&mu_);
      uint64_t& arriving = arriving_[link.bucket];
      const uint64_t limit = options_.max_arriving_bytes_per_uid;
      if (limit == 0 || arriving == 0 || (bytes <= limit && arriving <= limit - bytes)) {
        arriving += bytes;
        taken = true;
      }  // else the uid has some arriving: no zero entry is left
    }
    if (taken) {
      if (link.queued_for_bytes) {
        queue.pop_front();
        link.queued_for_bytes = false;
      }
      if (queue.empty()) {
        waiting_for_bytes_.erase(link.bucket);
      } else {
        WakeFirstWaiting(link.bucket);  // there may be room for the next too
      }
      return Room::kTaken;
    }
  }
  if (link.charged > 0) {  // a request of its own is arriving
    if (queue.empty()) waiting_for_bytes_.erase(link.bucket);
    return Room::kCut;
  }
  if (!link.queued_for_bytes) {
    queue.push_back(&link);
    link.queued_for_bytes = true;
    requests_delayed_.fetch_add(1, std::memory_order_relaxed);
  }
  link.waiting_for_bytes = true;
  return Room::kWait;
}

void FrameGate::WakeFirstWaiting(const BucketKey& key) {
  auto queue = waiting_for_bytes_.find(key);
  if (queue == waiting_for_bytes_.end() || queue->second.empty()) return;
  Link* first = queue->second.front();
  first->waiting_for_bytes = false;  // it tries again, first in line
  again_.insert(first);
}

void FrameGate::StopWaitingForBytes(Link& link) {
  if (!link.queued_for_bytes) return;
  link.queued_for_bytes = false;
  link.waiting_for_bytes = false;
  auto queue = waiting_for_bytes_.find(link.bucket);
  if (queue == waiting_for_bytes_.end()) return;
  const bool was_first = !queue->second.empty() && queue->second.front() == &link;
  queue->second.erase(std::remove(queue->second.begin(), queue->second.end(), &link),
                      queue->second.end());
  if (queue->second.empty()) {
    waiting_for_bytes_.erase(queue);
  } else if (was_first) {
    WakeFirstWaiting(link.bucket);
  }
}

void FrameGate::Settle(Link& link, Request& request) {
  if (request.counted == 0) return;
  {
    absl::MutexLock lock(&mu_);
    auto arriving = arriving_.find(link.bucket);
    if (arriving != arriving_.end()) {
      arriving->second -= std::min(arriving->second, request.counted);
      if (arriving->second == 0) arriving_.erase(arriving);
    }
  }
  // What it sent is its own, up to its charge: the link's others' charges
  // hold for what else the link sends.
  link.charged -= std::min(link.charged, request.counted);
  link.sent_while_charged -= std::min(link.sent_while_charged, request.counted);
  if (link.charged == 0) link.sent_while_charged = 0;
  request.counted = 0;
  WakeFirstWaiting(link.bucket);
}

void FrameGate::EndStream(Link& link, uint32_t stream) {
  if (link.queued_for_bytes && link.client_frames.stream == stream) {
    StopWaitingForBytes(link);  // what it waited to pass is dropped by gRPC now
    again_.insert(&link);
  }
  auto request = link.requests.find(stream);
  if (request == link.requests.end()) return;
  Settle(link, request->second);
  link.requests.erase(request);
}

bool FrameGate::PassData(Link& link, bool* cut) {
  Buffer& in = link.from_client;
  FrameWalk& frames = link.client_frames;
  const size_t available = in.end - in.cleared;
  auto open = link.requests.find(frames.stream);
  if (open == link.requests.end()) {
    // Not an open stream of the client's: gRPC keeps none of it.
    const size_t take = static_cast<size_t>(std::min<uint64_t>(available, frames.data_left));
    frames.data_left -= take;
    link.Pass(take);
    return true;
  }
  Request& request = open->second;
  if (request.left > 0) {
    const size_t take = static_cast<size_t>(
        std::min<uint64_t>({available, frames.data_left, request.left}));
    frames.data_left -= take;
    request.left -= take;
    link.Pass(take);
    if (request.left == 0) Settle(link, request);  // gRPC hands it to acld
    return true;
  }
  // The prefix, a byte at a time (a flag, then the length): its last byte
  // says how long the request is.
  const uint8_t byte = *in.unread();
  if (request.prefix_seen + 1 < kMessagePrefixBytes) {
    if (request.prefix_seen > 0) request.length = (request.length << 8) | byte;
    ++request.prefix_seen;
  } else {
    const uint64_t length = (request.length << 8) | byte;
    if (options_.max_request_bytes != 0 && length > options_.max_request_bytes) {
      CountCut();
      cut_log_.Warn(
          "a connection of uid {} sent a request of {} bytes, more than the {} acld takes; it is "
          "closed",
          link.uid(), length, options_.max_request_bytes);
      *cut = true;
      return false;
    }
    const uint64_t charge = ChargeOf(length);
    const Room room = Reserve(link, charge);
    if (room == Room::kCut) {
      CountCut();
      cut_log_.Warn(
          "a connection of uid {} started a request while its own was still arriving, and the "
          "new one would have to wait for room; it is closed",
          link.uid());
      *cut = true;
      return false;
    }
    if (room == Room::kWait) return false;  // the byte is read again on the link's turn
    request.left = length;
    request.counted = charge;
    link.charged += charge;
    request.prefix_seen = 0;
    request.length = 0;
  }
  --frames.data_left;
  link.Pass(1);
  return true;
}

bool FrameGate::Approve(Link& link) {
  const absl::Time now = Now();
  if (link.waiting(now)) return true;
  link.resume_at = absl::InfinitePast();
  Buffer& in = link.from_client;
  FrameWalk& frames = link.client_frames;
  while (true) {
    if (link.sent_while_charged > link.charged) {
      CountCut();
      cut_log_.Warn(
          "a connection of uid {} sent {} bytes while requests charged {} were arriving; it is "
          "closed",
          link.uid(), link.sent_while_charged, link.charged);
      return false;
    }
    if (frames.ends_stream && !frames.in_frame()) {
      frames.ends_stream = false;
      EndStream(link, frames.stream);
    }
    if (in.cleared == in.end) break;
    const size_t available = in.end - in.cleared;
    if (frames.pad_length_next) {
      frames.pad_length_next = false;
      const uint64_t rest = frames.data_left - 1;  // pad_length_next: data_left > 0
      frames.pad_left = std::min<uint64_t>(*in.unread(), rest);
      frames.data_left = rest - frames.pad_left;
      link.Pass(1);
      continue;
    }
    if (frames.data_left > 0) {
      bool cut = false;
      if (!PassData(link, &cut)) return !cut;
      continue;
    }
    if (frames.in_frame()) {
      link.Pass(frames.Skip(available));
      continue;
    }
    if (available < kFrameHeaderBytes) break;  // the rest of the header is still to come
    const FrameHeader header = ParseFrameHeader(in.unread());
    if (header.type == kHeadersFrame) {
      if (link.streams >= options_.max_streams_per_connection) {
        CountCut();
        cut_log_.Warn(
            "a connection of uid {} opened more than {} streams; it is closed (a client of "
            "acld opens one per connection)",
            link.uid(), options_.max_streams_per_connection);
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
      // A new stream of the client's (odd, above the last): gRPC skips the
      // others' data, which is then not counted either.
      if ((header.stream & 1) != 0 && header.stream > link.last_stream) {
        link.requests.try_emplace(header.stream);
        link.last_stream = header.stream;
      }
    }
    frames.stream = header.stream;
    frames.ends_stream = (header.type == kHeadersFrame || header.type == kDataFrame) &&
                         (header.flags & kEndStreamFlag) != 0;
    if (header.type == kDataFrame) {
      frames.data_left = header.length;
      frames.pad_length_next = (header.flags & kPaddedFlag) != 0 && header.length > 0;
    } else {
      frames.skip_left = header.length;
    }
    if (header.type == kResetFrame) EndStream(link, header.stream);
    link.Pass(kFrameHeaderBytes);
  }
  return true;
}

void FrameGate::WatchReplies(Link& link) {
  Buffer& out = link.to_client;
  FrameWalk& frames = link.grpc_frames;
  while (out.cleared < out.end) {
    const size_t available = out.end - out.cleared;
    if (frames.in_frame()) {
      out.cleared += frames.Skip(available);
      continue;
    }
    if (available < kFrameHeaderBytes) break;
    const FrameHeader header = ParseFrameHeader(out.unread());
    // gRPC ended the stream (its status, or a reset): what still comes of
    // its request is dropped, not kept.
    if (header.type == kResetFrame ||
        (header.type == kHeadersFrame && (header.flags & kEndStreamFlag) != 0)) {
      EndStream(link, header.stream);
    }
    frames.skip_left = header.length;
    out.cleared += kFrameHeaderBytes;
  }
}

bool FrameGate::Pump(Link& link, bool* more) {
  *more = false;
  for (int round = 0; round < kRoundsPerTurn; ++round) {
    bool moved = false;
    // The client's bytes to gRPC, as far as their frames allow; none read
    // while its next stream or request waits for its turn.
    if (!link.client_ended && !link.waiting(Now())) {
      const Io read = ReadInto(link.client, link.from_client, spares_, /*from_client=*/true);
      if (read == Io::kFailed) return false;
      if (read == Io::kEnd) link.client_ended = true;
      moved |= read != Io::kWouldBlock;
    }
    if (!Approve(link)) return false;
    const Io to_inner = WriteFrom(link.inner, link.from_client);
    if (to_inner == Io::kFailed) return false;
    moved |= to_inner == Io::kMoved;
    if (link.client_ended && !link.inner_shut && !link.from_client.sendable() &&
        link.resume_at == absl::InfinitePast() && !link.queued_for_bytes) {
      shutdown(link.inner, SHUT_WR);  // what is left (part of a header) never completes
      link.inner_shut = true;
    }
    if (!link.waiting(Now())) link.from_client.Release(spares_);
    // gRPC's bytes to the client, as they come.
    if (!link.inner_ended) {
      const Io read = ReadInto(link.inner, link.to_client, spares_, /*from_client=*/false);
      if (read == Io::kFailed) return false;
      if (read == Io::kEnd) {
        link.inner_ended = true;
        link.Draining(Now());
      }
      moved |= read != Io::kWouldBlock;
    }
    WatchReplies(link);
    const Io to_client = WriteFrom(link.client, link.to_client);
    if (to_client == Io::kFailed) return false;
    moved |= to_client == Io::kMoved;
    link.to_client.Release(spares_);
    // gRPC is done with the connection: so is the client, once it has what
    // gRPC sent (closing tells it the end; part of a header never completes).
    if (link.inner_ended && !link.to_client.sendable()) return false;
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
  if (link.to_client.sendable()) client_events |= EPOLLOUT;
  uint32_t inner_events = 0;
  if (!link.inner_ended && link.to_client.room() + link.to_client.begin > 0) {
    inner_events |= EPOLLIN;
  }
  if (link.from_client.sendable()) inner_events |= EPOLLOUT;
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
  if (link.turn_taken && link.waiting_for_turn(Now())) {
    auto bucket = buckets_.find(link.bucket);  // its turn goes to the next
    if (bucket != buckets_.end()) bucket->second.tokens += 1;
  }
  StopWaitingForBytes(link);
  again_.erase(&link);
  for (auto& [stream, request] : link.requests) Settle(link, request);
  link.requests.clear();
  if (link.client_watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.client, nullptr);
  if (link.inner_watched) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, link.inner, nullptr);
  CloseConnection(link.client);
  close(link.inner);  // gRPC reads the end of its connection
  link.client = link.inner = -1;
  link.from_client.Release(spares_);
  link.to_client.Release(spares_);
}

void FrameGate::Loop() {
  std::vector<epoll_event> events(256);
  std::set<Link*> waiting;  // for their turns, by their uids' rate
  while (true) {
    int timeout_ms = -1;
    if (!again_.empty()) {
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
        again_.insert(link);
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
      if ((events[i].events & (EPOLLHUP | EPOLLERR)) != 0 && side->client &&
          link->queued_for_bytes) {
        // Gone while its request waited for room: nothing it sent after
        // can be served, and its turn would never be read.
        touched.insert(link);
        Close(*link);
        continue;
      }
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
    std::vector<Link*> due(again_.begin(), again_.end());
    again_.clear();
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
        again_.erase(link);
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
