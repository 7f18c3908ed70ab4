#include "client/thread_id.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace acl_client {
namespace {

// Counts forks in this process's line (the child handler runs in each child).
std::atomic<uint64_t> forks{0};

bool CountForks() {
  return pthread_atfork(nullptr, nullptr,
                        [] { forks.fetch_add(1, std::memory_order_relaxed); }) == 0;
}

}  // namespace

uint64_t CurrentThreadId() {
  static const bool counting_forks = CountForks();
  thread_local uint64_t thread_id = 0;
  thread_local uint64_t forks_when_asked = 0;
  const uint64_t forks_now = forks.load(std::memory_order_relaxed);
  if (thread_id == 0 || forks_when_asked != forks_now || !counting_forks) {
    thread_id = static_cast<uint64_t>(syscall(SYS_gettid));
    forks_when_asked = forks_now;
  }
  return thread_id;
}

}  // namespace acl_client
