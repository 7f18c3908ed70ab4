#include "hal/acl/completion_dispatcher.h"

namespace hal::acl {

CompletionDispatcher::CompletionDispatcher()
    : shared_(std::make_shared<Shared>()), thread_(&CompletionDispatcher::Loop, shared_) {
  thread_id_ = thread_.get_id();
}

CompletionDispatcher::~CompletionDispatcher() {
  {
    absl::MutexLock lock(&shared_->mu);
    shared_->stop = true;
  }
  if (OnDispatcherThread()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void CompletionDispatcher::Notify(std::shared_ptr<Client> client) {
  if (client == nullptr || client->queued_.exchange(true, std::memory_order_acq_rel)) return;
  absl::MutexLock lock(&shared_->mu);
  shared_->pending.push_back(std::move(client));
}

void CompletionDispatcher::Loop(std::shared_ptr<Shared> shared) {
  // Swapped with `pending`, so both vectors keep their capacity.
  std::vector<std::shared_ptr<Client>> batch;
  while (true) {
    {
      absl::MutexLock lock(&shared->mu);
      shared->mu.Await(absl::Condition(
          +[](Shared* state) { return state->stop || !state->pending.empty(); }, shared.get()));
      if (shared->stop) return;
      batch.swap(shared->pending);
    }
    for (std::shared_ptr<Client>& client : batch) {
      // Cleared first: a notification during Dispatch queues it again.
      client->queued_.store(false, std::memory_order_release);
      client->Dispatch();
      client.reset();
    }
    batch.clear();
  }
}

}  // namespace hal::acl
