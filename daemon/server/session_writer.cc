#include "daemon/server/session_writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace acld::server {

SessionWriter::SessionWriter(uint64_t max_queued_bytes,
                             std::function<void(const std::string&)> on_overflow,
                             std::unique_ptr<MessageBudget::Hold> budget)
    : max_queued_bytes_(max_queued_bytes),
      on_overflow_(std::move(on_overflow)),
      budget_(std::move(budget)) {}

void SessionWriter::SetCarrier(std::shared_ptr<Carrier> carrier) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    carrier_ = std::move(carrier);
  }
  Pump();
}

void SessionWriter::Write(const acl::v1::ServerMessage& message) {
  std::string overflowed;  // why, when it did
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    const uint64_t bytes = message.ByteSizeLong() + kCostOfAQueuedMessage;
    const uint64_t after = queued_bytes_ + bytes;  // both far below 2^63
    // The session's own bound is the queue's: a message the carrier is still
    // sending (a reply of up to 32 MiB a client drains) leaves room for the
    // next. Its user's budget holds both.
    const uint64_t queue_after = after - carried_bytes_;
    absl::Status charged;
    if (max_queued_bytes_ != 0 && queue_after > max_queued_bytes_) {
      overflowed = absl::StrCat("a client stopped reading: ", queue_after,
                                " bytes of messages would wait for it, more than "
                                "--max_queued_bytes_per_session");
    } else if (budget_ != nullptr && !(charged = budget_->Resize(after)).ok()) {
      overflowed = std::string(charged.message());
    }
    if (!overflowed.empty()) {
      OverflowLocked();
    } else {
      queued_bytes_ = after;
      queue_.push_back(Queued{message, bytes});
    }
  }
  if (!overflowed.empty()) {
    if (on_overflow_) on_overflow_(overflowed);
    return;
  }
  Pump();
}

void SessionWriter::OverflowLocked() {
  closed_ = true;
  if (!pumping_) DropQueueLocked();  // else the pump drops it as it leaves
}

void SessionWriter::Resume() { Pump(); }

void SessionWriter::Pump() {
  std::shared_ptr<Carrier> carrier;
  {
    absl::MutexLock lock(&mu_);
    if (pumping_) {
      again_ = true;
      return;
    }
    if (closed_ || carrier_ == nullptr) return;
    pumping_ = true;
    carrier = carrier_;
  }
  while (true) {
    // Outside the lock: a carrier may call Resume() from inside Push or Take
    // (a gRPC write that completes at once), which must not deadlock.
    const bool free = carrier->Push();
    const acl::v1::ServerMessage* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (!closed_ && carrier_ != carrier) {
        carrier = carrier_;  // moved to another carrier
        continue;
      }
      if (!closed_ && free) CarrierFreeLocked();
      if (!closed_ && free && !queue_.empty()) {
        // Stays valid: only this thread removes from the queue, and others
        // add at its end, which leaves a deque's elements in place.
        next = &queue_.front().message;
      } else if (!again_ || closed_) {
        pumping_ = false;
        if (closed_) DropQueueLocked();
        return;
      }
      again_ = false;
    }
    if (next == nullptr) continue;
    carrier->Take(*next);
    absl::MutexLock lock(&mu_);
    if (!closed_) {
      carried_bytes_ += queue_.front().bytes;  // still counted while the carrier sends it
      queue_.pop_front();
    }
  }
}

void SessionWriter::DropQueueLocked() {
  queue_.clear();
  queued_bytes_ = 0;
  carried_bytes_ = 0;
  ChargeLocked();
}

void SessionWriter::CarrierFreeLocked() {
  queued_bytes_ -= std::min(queued_bytes_, carried_bytes_);
  carried_bytes_ = 0;
  ChargeLocked();
}

void SessionWriter::ChargeLocked() {
  if (budget_ != nullptr) budget_->Resize(queued_bytes_).IgnoreError();
}

bool SessionWriter::DrainedLocked() const {
  return closed_ || (queue_.empty() && !pumping_ && (carrier_ == nullptr || carrier_->Idle()));
}

void SessionWriter::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](SessionWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
                             return self->DrainedLocked();
                           },
                           this),
                       timeout);
}

void SessionWriter::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  // A pump in progress leaves the carrier (and the message it holds of the
  // queue) within a moment: it never blocks.
  mu_.Await(absl::Condition(
      +[](SessionWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
        return !self->pumping_;
      },
      this));
  DropQueueLocked();
  carrier_ = nullptr;
}

uint64_t SessionWriter::queued_bytes() const {
  absl::MutexLock lock(&mu_);
  return queued_bytes_;
}

}  // namespace acld::server
