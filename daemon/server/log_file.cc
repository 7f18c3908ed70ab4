#include "daemon/server/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "spdlog/sinks/base_sink.h"

namespace acld::server {
namespace {

// Appends each formatted line to a descriptor it owns.
class DescriptorSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit DescriptorSink(int fd) : fd_(fd) {}
  ~DescriptorSink() override { close(fd_); }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    const char* data = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = write(fd_, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk loses the line, never acld's thread
      data += n;
      left -= static_cast<size_t>(n);
    }
  }
  void flush_() override {}  // every line is written at once

 private:
  const int fd_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<spdlog::sinks::sink>> OpenLogFile(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_file ", path, " cannot be opened (a symlink is refused): ", std::strerror(errno)));
  }
  struct stat info {};
  std::string wrong;
  if (fstat(fd, &info) != 0) {
    wrong = std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    wrong = "it is not a regular file";
  } else if (info.st_uid != geteuid()) {
    wrong = absl::StrCat("it belongs to uid ", info.st_uid, ", not to acld's ", geteuid());
  } else if (info.st_nlink != 1) {
    wrong = absl::StrCat("it has ", info.st_nlink, " links");
  }
  if (!wrong.empty()) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_file ", path, " must be a regular file of acld's user with one link: ", wrong));
  }
  return std::make_shared<DescriptorSink>(fd);
}

}  // namespace acld::server
