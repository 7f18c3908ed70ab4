// Writes a session's outgoing messages (replies, callbacks due, failures,
// the end notice) to its carrier — the gRPC stream, or the shared-memory
// channel (session_ring.h) — in order, without a thread of its own and
// without ever blocking the thread that writes.
//
// Any thread may write: the session's request handling, device workers, the
// timer, admin calls. A message goes into the session's queue, and whichever
// thread finds the carrier free hands it the next message. A carrier takes a
// message without blocking (a gRPC write is started, a ring gets what fits)
// and says when it is free again (Resume). A stalled client thus stalls only
// its own queue, never a thread.
//
// The queue is bounded: a client that stops reading while its session keeps
// producing messages (failures, callbacks, copied bytes) would otherwise grow
// it without limit. Past `max_queued_bytes` of queued messages, or past what
// its user's budget lets it hold — the queue and the message the carrier is
// still sending (message_budget.h) — the writer gives up on the client: it drops the queue,
// writes nothing more and calls `on_overflow` with why (its owner logs it
// as the session's, within the session's and its tenant's log rates, and
// ends the session).
#ifndef ACLD_DAEMON_SERVER_SESSION_WRITER_H_
#define ACLD_DAEMON_SERVER_SESSION_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/server/message_budget.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class SessionWriter {
 public:
  // Where messages go. The writer calls Push and Take from one thread at a
  // time; neither may block.
  class Carrier {
   public:
    virtual ~Carrier() = default;
    // Goes on sending what it holds; true when it can take a message now.
    // False: it calls the writer's Resume() once it can.
    virtual bool Push() = 0;
    // Starts sending `message` (only after Push() said true).
    virtual void Take(const acl::v1::ServerMessage& message) = 0;
    // Holds nothing still to be sent (any thread may ask).
    virtual bool Idle() const = 0;
  };

  // What a queued message costs acld beside its serialized bytes (its place
  // in the queue, its objects, their allocations), counted with them: else
  // millions of 2-byte replies a client does not read would hold far more
  // memory than the bounds say.
  static constexpr uint64_t kCostOfAQueuedMessage = 256;

  // `max_queued_bytes` 0: no bound; `budget` null: none.
  explicit SessionWriter(uint64_t max_queued_bytes = 0,
                         std::function<void(const std::string& why)> on_overflow = nullptr,
                         std::unique_ptr<MessageBudget::Hold> budget = nullptr);

  // Later messages go to `carrier` (the first one, or the session moved to
  // another carrier; what the old one holds still goes out there).
  void SetCarrier(std::shared_ptr<Carrier> carrier);

  // Sends `message` after everything written before it.
  void Write(const acl::v1::ServerMessage& message);

  // The carrier can take messages again.
  void Resume();

  // Waits (at most `timeout`) until every message written went out.
  void Flush(absl::Duration timeout);

  // Writes nothing more. When this returns, no thread is inside the carrier
  // and none will enter it again: the carrier may go away.
  void Close();

  // What waits to go out: the queue and the message the carrier still sends.
  uint64_t queued_bytes() const;

 private:
  // Hands queued messages to the carrier until it is busy or the queue empty.
  void Pump();
  bool DrainedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Only while no pump holds a queued message.
  void DropQueueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up on the client (see above); the caller then calls `on_overflow`.
  void OverflowLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The carrier sent what it held.
  void CarrierFreeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The budget holds queued_bytes_ (giving back never fails).
  void ChargeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t max_queued_bytes_;
  const std::function<void(const std::string& why)> on_overflow_;
  const std::unique_ptr<MessageBudget::Hold> budget_;
  mutable absl::Mutex mu_;
  std::shared_ptr<Carrier> carrier_ ABSL_GUARDED_BY(mu_);
  struct Queued {
    acl::v1::ServerMessage message;
    uint64_t bytes;  // its size, counted once
  };
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  // The queue's and the carrier's: a message taken stays counted until the
  // carrier is free again (a 32 MiB reply the client does not read is held
  // by the carrier, not the queue).
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t carried_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // One thread pumps at a time; another that finds it busy asks it to look
  // again (`again`) instead of waiting.
  bool pumping_ ABSL_GUARDED_BY(mu_) = false;
  bool again_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SESSION_WRITER_H_
