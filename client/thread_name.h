// The library's own threads carry names (in /proc/PID/task/*/comm, top -H,
// gdb), so that an operator and the tests can tell them from the
// application's and from gRPC's: acl-stream (the session stream's reader),
// acl-flusher (sends batched asynchronous operations), acl-events (reads
// the shared-memory channel once callbacks are in use) and acl-callback
// (runs callbacks no thread of the application processes).
#ifndef ACLD_CLIENT_THREAD_NAME_H_
#define ACLD_CLIENT_THREAD_NAME_H_

#include <pthread.h>

#include <thread>

namespace acl_client {

// Named by its creator, at once: a name the thread gave itself would show
// only once it first ran. `name`: at most 15 characters (the kernel's limit).
inline void NameThread(std::thread& thread, const char* name) {
  pthread_setname_np(thread.native_handle(), name);
}

}  // namespace acl_client

#endif  // ACLD_CLIENT_THREAD_NAME_H_
