#include "daemon/server/command_reader.h"

#include <thread>
#include <utility>

#include "daemon/server/process_command.h"

namespace acld::server {

CommandReader::CommandReader(ReadFn read, absl::Duration patience)
    : patience_(patience),
      state_(std::make_shared<State>(read != nullptr ? std::move(read) : [](pid_t pid) {
        return ProcessCommand(pid);
      })) {
  std::thread([state = state_] { Loop(state); }).detach();
}

CommandReader::~CommandReader() {
  absl::MutexLock lock(&state_->mu);
  state_->stopping = true;
}

std::string CommandReader::Read(pid_t pid) {
  {
    State& state = *state_;
    absl::MutexLock lock(&state.mu);
    // Still reading an earlier process (stuck on it, perhaps): not again.
    if (state.asked != 0 || state.stopping) return ProcessName(pid);
    state.asked = pid;
    const uint64_t number = ++state.asked_number;
    auto answered = [&state, number]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu) {
      return state.answered_number == number;
    };
    if (state.mu.AwaitWithTimeout(absl::Condition(&answered), patience_)) {
      return std::exchange(state.answer, std::string());
    }
  }
  return ProcessName(pid);
}

void CommandReader::Loop(const std::shared_ptr<State>& state) {
  absl::MutexLock lock(&state->mu);
  while (true) {
    auto asked = [&state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return state->asked != 0 || state->stopping;
    };
    state->mu.Await(absl::Condition(&asked));
    if (state->stopping) return;
    const pid_t pid = state->asked;
    state->mu.Unlock();
    std::string command = state->read(pid);
    state->mu.Lock();
    // For the one who asked, if it still waits; the next ask starts afresh.
    state->answer = std::move(command);
    state->answered_number = state->asked_number;
    state->asked = 0;
  }
}

}  // namespace acld::server
