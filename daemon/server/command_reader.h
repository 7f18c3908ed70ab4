// Reads sessions' command lines (ProcessCommand) off the threads that open
// sessions, and after the open.
//
// Reading /proc/<pid>/cmdline reads the process's own memory: the kernel
// takes its address-space lock and faults its pages in, and a process can
// make that wait (a long mmap or munmap holding the lock, its arguments'
// pages mapped from a FUSE file it serves and never answers). The threads
// that open sessions serve every process on the host, so a session opens
// showing its process name (/proc/<pid>/comm, read from the kernel's task,
// never from the process's memory), and this reader's thread replaces it
// with the command line once read. Waiting for that read at the open cost
// two wake-ups of threads on every aclInit (docs/performance.md, session 28).
// Both are only what the operator sees: a process may set either itself.
#ifndef ACLD_DAEMON_SERVER_COMMAND_READER_H_
#define ACLD_DAEMON_SERVER_COMMAND_READER_H_

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/server/process_command.h"

namespace acld::server {

class CommandReader {
 public:
  using ReadFn = std::function<std::string(pid_t)>;
  // Gets a command line; runs on the reader's thread, under the reader's
  // lock (Ask and unanswered wait for it): it must be short and must not ask.
  using DoneFn = std::function<void(std::string command)>;

  // Asks waiting beyond the one being read. Many processes starting at once
  // fit; past it (the reader stuck on a process) their sessions keep their
  // names, and acld holds nothing more for them.
  static constexpr size_t kMaxWaiting = 256;

  // `read` (ProcessCommand by default) runs on the reader's thread.
  explicit CommandReader(ReadFn read = nullptr, size_t max_waiting = kMaxWaiting);
  // Stops the reader's thread. No `done` runs once this returns; one stuck
  // in a read ends with that read (it holds nothing of this object's but the
  // shared state), so acld's exit never waits for it.
  ~CommandReader();
  CommandReader(const CommandReader&) = delete;
  CommandReader& operator=(const CommandReader&) = delete;

  // Reads `pid`'s command line on the reader's thread and gives it to `done`
  // there (empty if it could not be read). False, and `done` never runs,
  // when kMaxWaiting asks wait already.
  bool Ask(pid_t pid, DoneFn done);
  // Asks not answered yet: the one being read and those waiting (for aclctl).
  size_t unanswered() const;

 private:
  // Shared with the reader's thread, which may outlive this object.
  struct State {
    State(ReadFn read, size_t max_waiting) : read(std::move(read)), max_waiting(max_waiting) {}
    const ReadFn read;
    const size_t max_waiting;
    absl::Mutex mu;
    std::deque<std::pair<pid_t, DoneFn>> waiting ABSL_GUARDED_BY(mu);
    bool reading ABSL_GUARDED_BY(mu) = false;
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };
  static void Loop(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_COMMAND_READER_H_
