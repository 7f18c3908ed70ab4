#include "daemon/server/command_reader.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace acld::server {

CommandReader::CommandReader(ReadFn read, size_t max_waiting, size_t max_waiting_per_tenant,
                             int readers)
    : state_(std::make_shared<State>(
          read != nullptr ? std::move(read) : [](pid_t pid) { return ProcessCommand(pid); },
          max_waiting, max_waiting_per_tenant)) {
  for (int i = 0; i < readers; ++i) std::thread([state = state_] { Loop(state); }).detach();
}

CommandReader::~CommandReader() {
  // Taken while a `done` runs (Loop runs it holding the lock): none runs after.
  absl::MutexLock lock(&state_->mu);
  state_->stopping = true;
  state_->waiting.clear();
  state_->waiting_of.clear();
}

size_t CommandReader::unanswered() const {
  absl::MutexLock lock(&state_->mu);
  return state_->waiting.size() + state_->reading.size();
}

bool CommandReader::Ask(pid_t pid, const Tenant& tenant, DoneFn done) {
  absl::MutexLock lock(&state_->mu);
  const auto of_tenant = state_->waiting_of.find(tenant);
  if (state_->stopping || state_->waiting.size() >= state_->max_waiting ||
      (of_tenant != state_->waiting_of.end() &&
       of_tenant->second >= state_->max_waiting_per_tenant)) {
    return false;
  }
  ++state_->waiting_of[tenant];
  state_->waiting.push_back({pid, tenant, std::move(done)});
  return true;
}

void CommandReader::Loop(const std::shared_ptr<State>& state) {
  absl::MutexLock lock(&state->mu);
  // The oldest ask whose tenant is not being read now, if any.
  auto next = [&state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
    return std::find_if(state->waiting.begin(), state->waiting.end(), [&](const Asked& asked) {
      return state->reading.count(asked.tenant) == 0;
    });
  };
  while (true) {
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
      return state->stopping || next() != state->waiting.end();
    };
    state->mu.Await(absl::Condition(&ready));
    if (state->stopping) return;
    const auto taken = next();
    Asked asked = std::move(*taken);
    state->waiting.erase(taken);
    if (--state->waiting_of[asked.tenant] == 0) state->waiting_of.erase(asked.tenant);
    state->reading.insert(asked.tenant);
    state->mu.Unlock();
    std::string command = state->read(asked.pid);
    state->mu.Lock();
    state->reading.erase(asked.tenant);
    if (state->stopping) return;
    asked.done(std::move(command));
  }
}

}  // namespace acld::server
