// Reads sessions' command lines (ProcessCommand) off the threads that open
// sessions.
//
// Reading /proc/<pid>/cmdline reads the process's own memory: the kernel
// takes its address-space lock and faults its pages in, and a process can
// make that wait (a long mmap or munmap holding the lock, its arguments'
// pages mapped from a FUSE file it serves and never answers). The threads
// that open sessions serve every process on the host, so they ask this
// reader's thread and wait for it only a moment; past that, or while the
// reader is still stuck on an earlier process, a session shows its process
// name (/proc/<pid>/comm, read from the kernel's task, never from the
// process's memory). Both are only what the operator sees: a process may set
// either itself.
#ifndef ACLD_DAEMON_SERVER_COMMAND_READER_H_
#define ACLD_DAEMON_SERVER_COMMAND_READER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/server/process_command.h"

namespace acld::server {

class CommandReader {
 public:
  using ReadFn = std::function<std::string(pid_t)>;

  // `read` (ProcessCommand by default) runs on the reader's thread. The
  // patience covers a read on a busy host; a stuck one costs it once.
  explicit CommandReader(ReadFn read = nullptr,
                         absl::Duration patience = absl::Milliseconds(100));
  // Stops the reader's thread; one stuck in a read ends with that read (it
  // holds nothing of this object's but the shared state), so acld's exit
  // never waits for it.
  ~CommandReader();
  CommandReader(const CommandReader&) = delete;
  CommandReader& operator=(const CommandReader&) = delete;

  // `pid`'s command line if the reader's thread has it within the patience,
  // otherwise its name.
  std::string Read(pid_t pid);

 private:
  // Shared with the reader's thread, which may outlive this object.
  struct State {
    explicit State(ReadFn read) : read(std::move(read)) {}
    const ReadFn read;
    absl::Mutex mu;
    // The process being read (0: none), and the answer once read.
    pid_t asked ABSL_GUARDED_BY(mu) = 0;
    uint64_t asked_number ABSL_GUARDED_BY(mu) = 0;
    uint64_t answered_number ABSL_GUARDED_BY(mu) = 0;
    std::string answer ABSL_GUARDED_BY(mu);
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };
  static void Loop(const std::shared_ptr<State>& state);

  const absl::Duration patience_;
  const std::shared_ptr<State> state_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_COMMAND_READER_H_
