// The calling thread's kernel thread id (gettid), as the exception info and
// every enqueued task report it.
//
// Asked on every enqueue: a system call each time cost launches about a fifth
// of their rate. The id is kept per thread; a fork() child's thread has a new
// one, so the cache is dropped on fork.
#ifndef ACLD_CLIENT_THREAD_ID_H_
#define ACLD_CLIENT_THREAD_ID_H_

#include <cstdint>

namespace acl_client {

uint64_t CurrentThreadId();

}  // namespace acl_client

#endif  // ACLD_CLIENT_THREAD_ID_H_
