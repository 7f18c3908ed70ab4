#include "daemon/server/session_writer.h"

namespace acld::server {

SessionWriter::SessionWriter(Stream* stream)
    : session_thread_(std::this_thread::get_id()),
      stream_(stream),
      writer_([this] { WriterLoop(); }) {}

SessionWriter::~SessionWriter() { Close(); }

void SessionWriter::Write(const acl::v1::ServerMessage& message) {
  if (std::this_thread::get_id() == session_thread_) {
    absl::MutexLock write_lock(&write_mu_);
    bool direct;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      direct = IdleLocked();
      if (!direct) queue_.push_back(message);
    }
    if (direct && stream_ != nullptr) stream_->Write(message);
    return;
  }
  absl::MutexLock lock(&mu_);
  if (!closed_) queue_.push_back(message);
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
      busy_ = true;
    }
    if (stream_ != nullptr) stream_->Write(message);
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
  }
  if (writer_.joinable() && std::this_thread::get_id() != writer_.get_id()) writer_.join();
  absl::MutexLock write_lock(&write_mu_);
  stream_ = nullptr;
}

}  // namespace acld::server
