#include "proto/acl/message_ring.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace acld {
namespace {

// Before a futex sleep a waiter polls for a while (spin_budget.h says how
// long and why).

uint32_t* FutexWord(std::atomic<uint32_t>* word) {
  // The static_asserts in the header make this the futex's 32-bit word.
  return reinterpret_cast<uint32_t*>(word);
}

// Sleeps while `*word == expected`, at most until `deadline`. Every outcome
// (woken, value already changed, signal, timeout) is handled the same way by
// the caller: it re-checks its condition. FUTEX_WAIT without
// FUTEX_PRIVATE_FLAG: the word is shared with another process.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, absl::Time deadline) {
  timespec timeout;
  timespec* timeout_or_null = nullptr;
  if (deadline != absl::InfiniteFuture()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return;
    timeout = absl::ToTimespec(left);  // FUTEX_WAIT takes a relative timeout
    timeout_or_null = &timeout;
  }
  syscall(SYS_futex, FutexWord(word), FUTEX_WAIT, expected, timeout_or_null, nullptr, 0);
}

// Wakes the sleepers on `word`, at most kMostWoken of them. A side's own
// waiters on one word are one or two threads (a receiving thread and its
// watcher), but a peer may park any number of its threads there: waking them
// all cost the waker a pass over every one, on each publish (acld's threads,
// for a hostile client). Those beyond the first few take wake-ups from the
// peer's own waiters, which then see the news at their next wait slice: the
// peer slows only itself.
constexpr int kMostWoken = 8;
void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, FutexWord(word), FUTEX_WAKE, kMostWoken, nullptr, nullptr, 0);
}

// Rings a peer's eventfd doorbell. A full counter (EAGAIN, after 2^64 - 2
// rings nobody read) still has the peer readable, so nothing is lost.
void RingDoorbell(int eventfd) {
  const uint64_t one = 1;
  while (write(eventfd, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

// Called right after publishing an index: wakes the peer if it sleeps, or is
// about to, waiting for that index — on its futex word, or with its doorbell
// when it waits in epoll. The common case (the peer is not waiting) costs a
// fence and a load, no syscall.
void WakePeerIfWaiting(std::atomic<uint32_t>& peer_waiting, std::atomic<uint32_t>& seq,
                       int peer_doorbell) {
  // The index store must be ordered before the flag load (store-load needs a
  // full fence). Paired with the fence in WaitUntil: either the sleeper's
  // re-check sees the new index, or this load sees its flag.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (peer_waiting.load(std::memory_order_relaxed) == 0) return;
  // Changing the word makes a FUTEX_WAIT that has not started yet return at
  // once (it compares against the value read before the re-check); the
  // release makes a waiter that reads the new value also see the new index.
  seq.fetch_add(1, std::memory_order_release);
  if (peer_doorbell >= 0) {
    RingDoorbell(peer_doorbell);
  } else {
    FutexWake(&seq);
  }
}

// The epoll side's half of WaitUntil: sets `waiting`, then re-checks `probe`
// (the same fence pairing as WaitUntil's). True when it is ready already; then
// the flag is cleared again and no wake-up will come for it.
template <typename Probe>
absl::StatusOr<bool> ArmUnlessReady(const Probe& probe, std::atomic<uint32_t>& waiting) {
  waiting.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // see WakePeerIfWaiting
  absl::StatusOr<bool> ready = probe();
  if (!ready.ok() || *ready) waiting.store(0, std::memory_order_relaxed);
  return ready;
}

// Polls `probe` (returning StatusOr<bool>: ready, not yet, or corrupt) for
// at most the budget (spin_budget.h).
template <typename Probe>
absl::StatusOr<bool> Spin(const Probe& probe, SpinBudget& budget) {
  absl::Status corrupt;
  const bool ready = budget.Poll([&] {
    absl::StatusOr<bool> found = probe();
    if (!found.ok()) corrupt = found.status();
    return !found.ok() || *found;
  });
  if (!corrupt.ok()) return corrupt;
  return ready;
}

// Returns when `probe` is true, fails, or `deadline` passes. `waiting` is this
// side's flag and `seq` the futex word the peer bumps after publishing when
// the flag is set (the eventcount pattern: no wake-up is lost, because the
// flag is set and the word read before the condition is re-checked). A hostile
// peer can clear the flag or bump the word: the first makes this wait run to
// its deadline, the second wakes it spuriously; either way it is bounded.
template <typename Probe>
absl::Status WaitUntil(const Probe& probe, absl::Time deadline, SpinBudget& budget,
                       std::atomic<uint32_t>& waiting, std::atomic<uint32_t>& seq,
                       const std::atomic<bool>& interrupted) {
  if (interrupted.load()) return absl::OkStatus();
  absl::StatusOr<bool> ready = probe();
  if (!ready.ok()) return ready.status();
  if (*ready || absl::Now() >= deadline) return absl::OkStatus();
  const auto start = std::chrono::steady_clock::now();
  ready = Spin(probe, budget);
  if (!ready.ok()) return ready.status();
  if (*ready) return absl::OkStatus();

  waiting.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // see WakePeerIfWaiting
  absl::Status status;
  for (;;) {
    // Read before the re-check: a publish after the re-check changes it, and
    // then FUTEX_WAIT returns at once instead of sleeping through the publish.
    const uint32_t seen_seq = seq.load(std::memory_order_acquire);
    ready = probe();
    if (!ready.ok()) {
      status = ready.status();
      break;
    }
    if (*ready) {
      budget.Slept(SpinBudget::NanosSince(start));
      break;
    }
    if (interrupted.load() || absl::Now() >= deadline) break;
    FutexWait(&seq, seen_seq, deadline);
  }
  waiting.store(0, std::memory_order_relaxed);
  return status;
}

// Changes a futex word and wakes its sleepers (FutexWake's few): a wait
// about to sleep (it compares against the value read before) returns as well.
void BumpAndWake(std::atomic<uint32_t>& seq) {
  seq.fetch_add(1, std::memory_order_release);
  FutexWake(&seq);
}

// Ends this side's waits for good: sets its flag, then bumps the futex word
// it sleeps on.
void InterruptWait(std::atomic<bool>& interrupted, MessageRing::Header* header,
                   std::atomic<uint32_t> MessageRing::Header::*seq) {
  interrupted.store(true);
  if (header == nullptr) return;  // never attached: nothing waits
  BumpAndWake(header->*seq);
}

absl::Status CheckAttach(void* region, size_t capacity, size_t max_message) {
  if (region == nullptr) return absl::InvalidArgumentError("message ring: no region");
  if (reinterpret_cast<uintptr_t>(region) % alignof(MessageRing::Header) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("message ring: the region must be aligned to ",
                                                   alignof(MessageRing::Header), " bytes"));
  }
  if (!MessageRing::IsValidCapacity(capacity)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "message ring: capacity ", capacity, " is not a power of two in [",
        MessageRing::kMinCapacity, ", ", MessageRing::kMaxCapacity, "]"));
  }
  if (max_message > capacity - MessageRing::kLengthBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("message ring: max_message ", max_message, " leaves no room for the ",
                     MessageRing::kLengthBytes, "-byte length in a capacity of ", capacity));
  }
  return absl::OkStatus();
}

// Copies `size` bytes to the data area from ring index `index` on, wrapping
// around its end. `mask` is capacity - 1; size <= capacity.
void CopyIn(unsigned char* data, uint64_t mask, uint64_t index, const void* source,
            size_t size) {
  if (size == 0) return;  // an empty string_view's data() may be null
  const size_t offset = index & mask;
  const size_t first = std::min<size_t>(size, mask + 1 - offset);
  std::memcpy(data + offset, source, first);
  if (first < size) {
    std::memcpy(data, static_cast<const unsigned char*>(source) + first, size - first);
  }
}

// The other direction. The peer may be writing these bytes meanwhile: then the
// copy holds garbage, which is the peer's own message; nothing here depends
// on the bytes' values.
void CopyOut(const unsigned char* data, uint64_t mask, uint64_t index, void* target,
             size_t size) {
  if (size == 0) return;
  const size_t offset = index & mask;
  const size_t first = std::min<size_t>(size, mask + 1 - offset);
  std::memcpy(target, data + offset, first);
  if (first < size) {
    std::memcpy(static_cast<unsigned char*>(target) + first, data, size - first);
  }
}

// The little-endian length at ring index `index`. Each byte is read exactly
// once, with an atomic load the compiler may neither repeat nor split: a plain
// read could be re-done after the bounds check (a double fetch), letting the
// peer change the length between the check and the use.
uint32_t ReadLength(const unsigned char* data, uint64_t mask, uint64_t index) {
  uint32_t length = 0;
  for (uint64_t i = 0; i < MessageRing::kLengthBytes; ++i) {
    const uint32_t byte = __atomic_load_n(&data[(index + i) & mask], __ATOMIC_RELAXED);
    length |= byte << (8 * i);
  }
  return length;
}

void WriteLength(unsigned char* data, uint64_t mask, uint64_t index, uint32_t length) {
  const unsigned char bytes[MessageRing::kLengthBytes] = {
      static_cast<unsigned char>(length), static_cast<unsigned char>(length >> 8),
      static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 24)};
  CopyIn(data, mask, index, bytes, sizeof(bytes));
}

}  // namespace

bool MessageRing::IsValidCapacity(size_t capacity) {
  return capacity >= kMinCapacity && capacity <= kMaxCapacity &&
         (capacity & (capacity - 1)) == 0;
}

absl::Status MessageRing::Format(void* region, size_t capacity) {
  absl::Status valid = CheckAttach(region, capacity, /*max_message=*/0);
  if (!valid.ok()) return valid;
  Header* header = new (region) Header;
  header->head.store(0, std::memory_order_relaxed);
  header->tail.store(0, std::memory_order_relaxed);
  header->consumer_waiting.store(0, std::memory_order_relaxed);
  header->data_seq.store(0, std::memory_order_relaxed);
  header->producer_waiting.store(0, std::memory_order_relaxed);
  header->space_seq.store(0, std::memory_order_relaxed);
  return absl::OkStatus();
}

// ----------------------------------------------------------------- Producer

MessageRing::Producer::Producer(void* region, size_t capacity, size_t max_message)
    : status_(CheckAttach(region, capacity, max_message)) {
  if (!status_.ok()) return;
  header_ = HeaderOf(region);
  data_ = static_cast<unsigned char*>(region) + sizeof(Header);
  capacity_ = capacity;
  max_message_ = max_message;
}

absl::Status MessageRing::Producer::Fail(absl::Status status) {
  status_ = std::move(status);
  return status_;
}

absl::StatusOr<uint64_t> MessageRing::Producer::LoadTail() {
  const uint64_t tail = header_->tail.load(std::memory_order_acquire);
  // Differences of the free-running indices are taken modulo 2^64, so a tail
  // ahead of head_ yields a huge difference and fails the same test as one
  // more than a capacity behind.
  if (head_ - tail > capacity_) {
    return Fail(absl::DataLossError(
        absl::StrCat("message ring: the consumer's tail ", tail, " is ahead of head ", head_,
                     " or more than the capacity of ", capacity_, " bytes behind it")));
  }
  // Bytes the consumer released cannot come back: that would let the
  // consumer make this side believe in less room than there is, or hide that
  // it is rewriting its index.
  if (head_ - tail > head_ - seen_tail_) {
    return Fail(absl::DataLossError(absl::StrCat(
        "message ring: the consumer's tail moved back from ", seen_tail_, " to ", tail)));
  }
  seen_tail_ = tail;
  return tail;
}

absl::StatusOr<bool> MessageRing::Producer::TryWrite(absl::string_view message) {
  if (!status_.ok()) return status_;
  if (message.size() > max_message_) {
    return absl::InvalidArgumentError(absl::StrCat("message ring: a message of ", message.size(),
                                                   " bytes exceeds the limit of ", max_message_));
  }
  absl::StatusOr<uint64_t> tail = LoadTail();
  if (!tail.ok()) return tail.status();
  const uint64_t frame = kLengthBytes + message.size();
  if (frame > capacity_ - (head_ - *tail)) {
    wanted_space_ = frame;
    return false;
  }
  const uint64_t mask = capacity_ - 1;
  WriteLength(data_, mask, head_, static_cast<uint32_t>(message.size()));
  CopyIn(data_, mask, head_ + kLengthBytes, message.data(), message.size());
  head_ += frame;
  // Release: the consumer that sees the new head also sees the bytes.
  header_->head.store(head_, std::memory_order_release);
  wanted_space_ = kLengthBytes;
  WakePeerIfWaiting(header_->consumer_waiting, header_->data_seq, peer_doorbell_);
  return true;
}

absl::StatusOr<bool> MessageRing::Producer::HasWantedSpace() {
  absl::StatusOr<uint64_t> tail = LoadTail();
  if (!tail.ok()) return tail.status();
  return capacity_ - (head_ - *tail) >= wanted_space_;
}

absl::Status MessageRing::Producer::WaitForSpace(absl::Time deadline) {
  if (!status_.ok()) return status_;
  return WaitUntil([this] { return HasWantedSpace(); }, deadline, spin_,
                   header_->producer_waiting, header_->space_seq, *interrupted_);
}

bool MessageRing::Producer::Drained() {
  if (!status_.ok()) return false;
  absl::StatusOr<uint64_t> tail = LoadTail();
  return tail.ok() && *tail == head_;
}

absl::StatusOr<bool> MessageRing::Producer::ArmWakeup() {
  if (!status_.ok()) return status_;
  return ArmUnlessReady([this] { return HasWantedSpace(); }, header_->producer_waiting);
}

void MessageRing::Producer::Disarm() {
  if (header_ != nullptr) header_->producer_waiting.store(0, std::memory_order_relaxed);
}

void MessageRing::Producer::Interrupt() {
  InterruptWait(*interrupted_, header_, &Header::space_seq);
}

// ----------------------------------------------------------------- Consumer

MessageRing::Consumer::Consumer(void* region, size_t capacity, size_t max_message)
    : status_(CheckAttach(region, capacity, max_message)) {
  if (!status_.ok()) return;
  header_ = HeaderOf(region);
  data_ = static_cast<const unsigned char*>(region) + sizeof(Header);
  capacity_ = capacity;
  max_message_ = max_message;
}

absl::Status MessageRing::Consumer::Fail(absl::Status status) {
  status_ = std::move(status);
  return status_;
}

absl::StatusOr<uint64_t> MessageRing::Consumer::LoadHead() {
  const uint64_t head = header_->head.load(std::memory_order_acquire);
  // Modulo 2^64, as in Producer::LoadTail: a head behind tail_ yields a huge
  // difference and fails the same test as one more than a capacity ahead.
  if (head - tail_ > capacity_) {
    return Fail(absl::DataLossError(
        absl::StrCat("message ring: the producer's head ", head, " is behind tail ", tail_,
                     " or more than the capacity of ", capacity_, " bytes ahead of it")));
  }
  // Published bytes cannot be withdrawn: a head that moves back means the
  // producer is rewriting its index, and what this side already saw is suspect.
  if (head - tail_ < seen_head_ - tail_) {
    return Fail(absl::DataLossError(absl::StrCat(
        "message ring: the producer's head moved back from ", seen_head_, " to ", head)));
  }
  seen_head_ = head;
  return head;
}

absl::StatusOr<std::optional<std::string>> MessageRing::Consumer::TryRead() {
  if (!status_.ok()) return status_;
  absl::StatusOr<uint64_t> head = LoadHead();
  if (!head.ok()) return head.status();
  const uint64_t available = *head - tail_;
  if (available == 0) return std::nullopt;
  // The producer publishes whole frames only, so at tail_ there is a frame.
  if (available < kLengthBytes) {
    return Fail(absl::DataLossError(absl::StrCat("message ring: ", available,
                                                 " bytes published at tail ", tail_,
                                                 ", fewer than a message's length field")));
  }
  const uint64_t mask = capacity_ - 1;
  const uint32_t length = ReadLength(data_, mask, tail_);
  if (length > max_message_) {
    return Fail(absl::DataLossError(absl::StrCat("message ring: a message of ", length,
                                                 " bytes at tail ", tail_,
                                                 " exceeds the limit of ", max_message_)));
  }
  const uint64_t frame = kLengthBytes + uint64_t{length};
  if (frame > available) {
    return Fail(absl::DataLossError(absl::StrCat("message ring: a message of ", length,
                                                 " bytes at tail ", tail_, " runs past the ",
                                                 available, " bytes published")));
  }
  std::string message(length, '\0');
  CopyOut(data_, mask, tail_ + kLengthBytes, message.data(), length);
  // Only now, with the bytes copied out, may the producer reuse them.
  tail_ += frame;
  header_->tail.store(tail_, std::memory_order_release);
  WakePeerIfWaiting(header_->producer_waiting, header_->space_seq, peer_doorbell_);
  return std::optional<std::string>(std::move(message));
}

absl::StatusOr<bool> MessageRing::Consumer::HasData() {
  absl::StatusOr<uint64_t> head = LoadHead();
  if (!head.ok()) return head.status();
  return *head != tail_;
}

absl::Status MessageRing::Consumer::WaitForData(absl::Time deadline) {
  if (!status_.ok()) return status_;
  return WaitUntil([this] { return HasData(); }, deadline, spin_, header_->consumer_waiting,
                   header_->data_seq, *interrupted_);
}

absl::StatusOr<bool> MessageRing::Consumer::ArmWakeup() {
  if (!status_.ok()) return status_;
  absl::StatusOr<bool> ready =
      ArmUnlessReady([this] { return HasData(); }, header_->consumer_waiting);
  if (ready.ok() && !*ready) armed_at_ = std::chrono::steady_clock::now();
  return ready;
}

void MessageRing::Consumer::Disarm() {
  if (header_ != nullptr) header_->consumer_waiting.store(0, std::memory_order_relaxed);
  // Woken (by the doorbell) this soon after going to sleep: the next spin
  // for data covers such a gap instead of sleeping through it.
  if (armed_at_.has_value()) {
    spin_.Slept(SpinBudget::NanosSince(*armed_at_));
    armed_at_.reset();
  }
}

absl::StatusOr<bool> MessageRing::Consumer::SpinForData() {
  if (!status_.ok()) return status_;
  absl::StatusOr<bool> ready = HasData();
  if (!ready.ok() || *ready) return ready;
  return Spin([this] { return HasData(); }, spin_);
}

bool MessageRing::Consumer::LeaveToWatcher() {
  if (header_ == nullptr) return false;
  header_->consumer_waiting.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // see WakePeerIfWaiting
  return Unread();
}

void MessageRing::Consumer::Return() {
  if (header_ != nullptr) header_->consumer_waiting.store(0, std::memory_order_relaxed);
}

bool MessageRing::Consumer::Unread() const {
  return header_ != nullptr && header_->head.load(std::memory_order_acquire) !=
                                   header_->tail.load(std::memory_order_relaxed);
}

uint32_t MessageRing::Consumer::PublishSeq() const {
  return header_ == nullptr ? 0 : header_->data_seq.load(std::memory_order_acquire);
}

void MessageRing::Consumer::WaitForPublishAfter(uint32_t seq, absl::Time deadline) const {
  if (header_ != nullptr) FutexWait(&header_->data_seq, seq, deadline);
}

void MessageRing::Consumer::WakeWatchers() const {
  if (header_ != nullptr) BumpAndWake(header_->data_seq);
}

void MessageRing::Consumer::Interrupt() { InterruptWait(*interrupted_, header_, &Header::data_seq); }

}  // namespace acld
