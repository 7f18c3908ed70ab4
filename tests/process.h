// Child processes for the integration tests: the daemon, aclctl and clients.
#ifndef ACLD_TESTS_PROCESS_H_
#define ACLD_TESTS_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace acld_test {

// A started child with its stdin and stdout as pipes; killed (SIGKILL) and
// reaped when destroyed, so no test leaves processes behind.
class Process {
 public:
  // Starts `argv[0]` with `argv` and the test's environment plus `env`.
  Process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Reads stdout until a line equal to `line` or that starts with it
  // arrives; false on EOF or timeout. Lines read on the way are kept in output().
  bool WaitForLine(const std::string& line, absl::Duration timeout);
  void WriteLine(const std::string& line);
  void CloseStdin();

  // Waits for exit; returns the exit code, 128+signal when killed, or nullopt on timeout.
  std::optional<int> Wait(absl::Duration timeout);
  void Signal(int signal_number);

  // Everything read from stdout so far (Wait reads the rest).
  const std::string& output() const { return output_; }

 private:
  bool ReadSome(absl::Duration timeout);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string output_;
  size_t scanned_ = 0;  // output_ before this offset was matched already
  std::optional<int> exit_code_;
};

// Runs a command to completion and returns {exit code, stdout}.
std::pair<int, std::string> RunToCompletion(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env = {},
                                            absl::Duration timeout = absl::Seconds(30));

// A short fresh directory under /tmp (socket paths must fit in 108 bytes),
// removed with its contents when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace acld_test

#endif  // ACLD_TESTS_PROCESS_H_
