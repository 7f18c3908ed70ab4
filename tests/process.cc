#include "tests/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/time/clock.h"

namespace acld_test {

Process::Process(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) std::abort();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s failed: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  signal(SIGPIPE, SIG_IGN);
}

Process::~Process() {
  if (!exit_code_.has_value()) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

bool Process::ReadSome(absl::Duration timeout) {
  pollfd fd{stdout_fd_, POLLIN, 0};
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  if (poll(&fd, 1, timeout_ms < 0 ? 0 : timeout_ms) <= 0) return false;
  char buffer[4096];
  const ssize_t n = read(stdout_fd_, buffer, sizeof(buffer));
  if (n <= 0) return false;
  output_.append(buffer, static_cast<size_t>(n));
  return true;
}

bool Process::WaitForLine(const std::string& line, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    size_t end;
    while ((end = output_.find('\n', scanned_)) != std::string::npos) {
      const std::string candidate = output_.substr(scanned_, end - scanned_);
      scanned_ = end + 1;
      if (candidate.rfind(line, 0) == 0) return true;
    }
    if (absl::Now() >= deadline || !ReadSome(deadline - absl::Now())) return false;
  }
}

void Process::WriteLine(const std::string& line) {
  const std::string data = line + "\n";
  if (write(stdin_fd_, data.data(), data.size()) < 0) {
    // The child is gone; Wait() will tell.
  }
}

void Process::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

void Process::Signal(int signal_number) { kill(pid_, signal_number); }

std::optional<int> Process::Wait(absl::Duration timeout) {
  if (exit_code_.has_value()) return exit_code_;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      while (ReadSome(absl::ZeroDuration())) {
      }
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    // Drain stdout so a chatty child never blocks on a full pipe.
    if (!ReadSome(absl::Milliseconds(5))) absl::SleepFor(absl::Milliseconds(5));
  }
}

std::pair<int, std::string> RunToCompletion(const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env,
                                            absl::Duration timeout) {
  Process process(argv, env);
  process.CloseStdin();
  const std::optional<int> code = process.Wait(timeout);
  return {code.value_or(-1), process.output()};
}

TempDir::TempDir() {
  char pattern[] = "/tmp/acld-test-XXXXXX";
  if (mkdtemp(pattern) == nullptr) std::abort();
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace acld_test
