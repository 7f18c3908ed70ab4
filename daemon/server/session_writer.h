// Writes a session's outgoing messages (replies, callbacks due, failures,
// the end notice) to its carrier — the gRPC stream, or the shared-memory
// channel (session_ring.h) — in order.
//
// A carrier's write blocks while the client does not read (a stopped
// process, a full window or ring). Only the session's own threads may ever block on
// that: the session thread writes its replies directly when nothing is
// queued; every other thread (device workers, the timer, admin calls) queues
// the message for the session's writer thread and goes on at once. A stalled
// client thus stalls only its own session, never the device's workers.
//
// The queue is bounded: a client that stops reading while its session keeps
// producing messages (failures, callbacks, copied bytes) would otherwise grow
// it without limit. Past `max_queued_bytes` the writer gives up on the client:
// it drops the queue, writes nothing more and calls `on_overflow` (which ends
// the session).
#ifndef ACLD_DAEMON_SERVER_SESSION_WRITER_H_
#define ACLD_DAEMON_SERVER_SESSION_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class SessionWriter {
 public:
  // Writes one message to the carrier; may block while the client is behind.
  using Sink = std::function<void(const acl::v1::ServerMessage&)>;

  // Must be created on the session's thread (the gRPC handler).
  // `max_queued_bytes` 0: no bound.
  explicit SessionWriter(Sink sink, uint64_t max_queued_bytes = 0,
                         std::function<void()> on_overflow = nullptr);
  ~SessionWriter();

  // Sends `message` after everything written or queued before it.
  void Write(const acl::v1::ServerMessage& message);

  // Waits (at most `timeout`) until every queued message was written.
  void Flush(absl::Duration timeout);

  // Writes nothing more; the carrier may go away after this returns.
  void Close();

  // Later messages go to `sink` (the session moved to another carrier).
  void SetSink(Sink sink);

  uint64_t queued_bytes() const;

 private:
  void WriterLoop();
  bool IdleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !busy_; }

  // Queues `message` (caller holds mu_); false when that overflowed the bound.
  bool QueueLocked(const acl::v1::ServerMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::thread::id session_thread_;
  const uint64_t max_queued_bytes_;
  const std::function<void()> on_overflow_;
  // Held across taking a message and writing it, so that direct writes and
  // the writer thread's writes keep one order.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  Sink sink_ ABSL_GUARDED_BY(write_mu_);
  mutable absl::Mutex mu_;
  std::deque<acl::v1::ServerMessage> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // the writer thread holds a message
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SESSION_WRITER_H_
