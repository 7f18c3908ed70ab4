#include "daemon/server/session_writer.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace acld::server {

SessionWriter::SessionWriter(Sink sink, uint64_t max_queued_bytes,
                             std::function<void()> on_overflow)
    : session_thread_(std::this_thread::get_id()),
      max_queued_bytes_(max_queued_bytes),
      on_overflow_(std::move(on_overflow)),
      sink_(std::move(sink)),
      writer_([this] { WriterLoop(); }) {}

SessionWriter::~SessionWriter() { Close(); }

bool SessionWriter::QueueLocked(const acl::v1::ServerMessage& message) {
  const uint64_t bytes = message.ByteSizeLong();
  if (max_queued_bytes_ != 0 && queued_bytes_ + bytes > max_queued_bytes_) {
    spdlog::warn("a client stopped reading: {} bytes of messages wait for it; its session ends "
                 "(--max_queued_bytes_per_session)", queued_bytes_ + bytes);
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    return false;
  }
  queued_bytes_ += bytes;
  queue_.push_back(message);
  return true;
}

void SessionWriter::Write(const acl::v1::ServerMessage& message) {
  bool overflowed = false;
  if (std::this_thread::get_id() == session_thread_) {
    absl::MutexLock write_lock(&write_mu_);
    bool direct = false;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      direct = IdleLocked();
      if (!direct) overflowed = !QueueLocked(message);
    }
    if (direct && sink_) sink_(message);
  } else {
    absl::MutexLock lock(&mu_);
    if (!closed_) overflowed = !QueueLocked(message);
  }
  if (overflowed && on_overflow_) on_overflow_();
}

uint64_t SessionWriter::queued_bytes() const {
  absl::MutexLock lock(&mu_);
  return queued_bytes_;
}

void SessionWriter::WriterLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](SessionWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->closed_ || !self->queue_.empty();
          },
          this));
      if (closed_) return;
    }
    absl::MutexLock write_lock(&write_mu_);
    acl::v1::ServerMessage message;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      if (queue_.empty()) continue;  // a direct write took the turn
      message = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= std::min<uint64_t>(queued_bytes_, message.ByteSizeLong());
      busy_ = true;
    }
    if (sink_) sink_(message);
    absl::MutexLock lock(&mu_);
    busy_ = false;
  }
}

void SessionWriter::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](SessionWriter* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
                             return self->closed_ || self->IdleLocked();
                           },
                           this),
                       timeout);
}

void SessionWriter::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_ && !writer_.joinable()) return;
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  if (writer_.joinable() && std::this_thread::get_id() != writer_.get_id()) writer_.join();
  absl::MutexLock write_lock(&write_mu_);
  sink_ = nullptr;
}

void SessionWriter::SetSink(Sink sink) {
  absl::MutexLock write_lock(&write_mu_);
  absl::MutexLock lock(&mu_);
  if (!closed_) sink_ = std::move(sink);
}

}  // namespace acld::server
