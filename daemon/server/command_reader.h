// Reads sessions' command lines (ProcessCommand) off the threads that open
// sessions, and after the open.
//
// Reading /proc/<pid>/cmdline reads the process's own memory: the kernel
// takes its address-space lock and faults its pages in, and a process can
// make that wait (a long mmap or munmap holding the lock, its arguments'
// pages mapped from a FUSE file it serves and never answers). The threads
// that open sessions serve every process on the host, so a session opens
// showing its process name (/proc/<pid>/comm, read from the kernel's task,
// never from the process's memory), and a reader's thread replaces it with
// the command line once read. Waiting for that read at the open cost two
// wake-ups of threads on every aclInit (docs/performance.md, session 28).
// Both are only what the operator sees: a process may set either itself.
//
// Shared fairly between tenants (a session's quota group if it connected
// through one, else its uid: daemon/core/tenant.h): a few reader threads,
// each tenant's reads one at a time (a process that makes its read wait
// holds one thread, and only its own tenant's later reads wait behind it),
// and each tenant's waiting asks bounded too (one tenant opening sessions
// in a burst cannot fill the queue).
#ifndef ACLD_DAEMON_SERVER_COMMAND_READER_H_
#define ACLD_DAEMON_SERVER_COMMAND_READER_H_

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"
#include "daemon/server/process_command.h"

namespace acld::server {

class CommandReader {
 public:
  using ReadFn = std::function<std::string(pid_t)>;
  // Gets a command line; runs on the reader's thread, under the reader's
  // lock (Ask and unanswered wait for it): it must be short and must not ask.
  using DoneFn = std::function<void(std::string command)>;

  // Asks waiting beyond those being read, in all and of one tenant. Many
  // processes starting at once fit; past it (readers stuck on processes)
  // their sessions keep their names, and acld holds nothing more for them.
  static constexpr size_t kMaxWaiting = 256;
  static constexpr size_t kMaxWaitingPerTenant = 128;
  // Reader threads: as many tenants' reads can be stuck before the others'
  // wait.
  static constexpr int kReaders = 3;

  // `read` (ProcessCommand by default) runs on the readers' threads.
  explicit CommandReader(ReadFn read = nullptr, size_t max_waiting = kMaxWaiting,
                         size_t max_waiting_per_tenant = kMaxWaitingPerTenant,
                         int readers = kReaders);
  // Stops the readers' threads. No `done` runs once this returns; one stuck
  // in a read ends with that read (it holds nothing of this object's but the
  // shared state), so acld's exit never waits for it.
  ~CommandReader();
  CommandReader(const CommandReader&) = delete;
  CommandReader& operator=(const CommandReader&) = delete;

  // Reads `pid`'s command line on a reader's thread, after the earlier
  // asks of `tenant` (the session's), and gives it to `done` there (empty if
  // it could not be read). False, and `done` never runs, when kMaxWaiting
  // asks wait already, or kMaxWaitingPerTenant of `tenant`.
  bool Ask(pid_t pid, const Tenant& tenant, DoneFn done);
  // Asks not answered yet: those being read and those waiting (for aclctl).
  size_t unanswered() const;

 private:
  struct Asked {
    pid_t pid;
    Tenant tenant;
    DoneFn done;
  };
  // Shared with the readers' threads, which may outlive this object.
  struct State {
    State(ReadFn read, size_t max_waiting, size_t max_waiting_per_tenant)
        : read(std::move(read)),
          max_waiting(max_waiting),
          max_waiting_per_tenant(max_waiting_per_tenant) {}
    const ReadFn read;
    const size_t max_waiting;
    const size_t max_waiting_per_tenant;
    absl::Mutex mu;
    std::deque<Asked> waiting ABSL_GUARDED_BY(mu);  // oldest first
    std::map<Tenant, size_t> waiting_of ABSL_GUARDED_BY(mu);
    std::set<Tenant> reading ABSL_GUARDED_BY(mu);  // tenants being read now
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };
  // A reader's thread: takes the oldest ask whose tenant nobody reads now.
  static void Loop(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_COMMAND_READER_H_
