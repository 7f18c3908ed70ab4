#include "tools/simbin/simbin_lib.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace acld::simbin {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::UnknownError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::vector<hal::sim::SimBinaryEntry>> ParseMappings(
    const std::vector<std::string>& args, const std::set<std::string>& known_kernels) {
  std::vector<hal::sim::SimBinaryEntry> entries;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", arg, "' is not FUNCTION=KERNEL"));
    }
    hal::sim::SimBinaryEntry entry{arg.substr(0, eq), arg.substr(eq + 1)};
    if (!entry.kernel.empty() && known_kernels.count(entry.kernel) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", entry.kernel, "' is not a built-in sim kernel (known: ",
                       absl::StrJoin(known_kernels, ", "), ")"));
    }
    entries.push_back(std::move(entry));
  }
  absl::Status valid = hal::sim::ValidateSimBinaryEntries(entries);
  if (!valid.ok()) return valid;
  return entries;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temporary);
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoError("cannot write", temporary);
      close(fd);
      unlink(temporary.c_str());
      return status;
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    absl::Status status = ErrnoError("cannot write", temporary);
    unlink(temporary.c_str());
    return status;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoError("cannot rename onto", path);
    unlink(temporary.c_str());
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  std::string bytes;
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoError("cannot read", path);
      close(fd);
      return status;
    }
    if (n == 0) break;
    if (bytes.size() + static_cast<size_t>(n) > max_bytes) {
      close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return bytes;
}

}  // namespace acld::simbin
