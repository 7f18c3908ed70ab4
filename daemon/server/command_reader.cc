#include "daemon/server/command_reader.h"

#include <thread>
#include <utility>

namespace acld::server {

CommandReader::CommandReader(ReadFn read, size_t max_waiting)
    : state_(std::make_shared<State>(
          read != nullptr ? std::move(read) : [](pid_t pid) { return ProcessCommand(pid); },
          max_waiting)) {
  std::thread([state = state_] { Loop(state); }).detach();
}

CommandReader::~CommandReader() {
  // Taken while a `done` runs (Loop runs it holding the lock): none runs after.
  absl::MutexLock lock(&state_->mu);
  state_->stopping = true;
  state_->waiting.clear();
}

size_t CommandReader::unanswered() const {
  absl::MutexLock lock(&state_->mu);
  return state_->waiting.size() + (state_->reading ? 1 : 0);
}

bool CommandReader::Ask(pid_t pid, DoneFn done) {
  absl::MutexLock lock(&state_->mu);
  if (state_->stopping || state_->waiting.size() >= state_->max_waiting) return false;
  state_->waiting.emplace_back(pid, std::move(done));
  return true;
}

void CommandReader::Loop(const std::shared_ptr<State>& state) {
  absl::MutexLock lock(&state->mu);
  while (true) {
    auto asked = [&state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return !state->waiting.empty() || state->stopping;
    };
    state->mu.Await(absl::Condition(&asked));
    if (state->stopping) return;
    auto [pid, done] = std::move(state->waiting.front());
    state->waiting.pop_front();
    state->reading = true;
    state->mu.Unlock();
    std::string command = state->read(pid);
    state->mu.Lock();
    state->reading = false;
    if (state->stopping) return;
    done(std::move(command));
  }
}

}  // namespace acld::server
