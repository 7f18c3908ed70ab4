// acld's log file (--log_file): opened once, checked, and written through
// that descriptor only.
//
// acld runs as root and its log names processes, users and what they asked
// for. The file is never opened through a symlink, must be a regular file of
// acld's own user with one link (another user's file, or a hard link to
// one, would hand them the log or have root append to their file), and is
// never opened by its name again: a check followed by a second open by name
// (as spdlog's file sink does) let a user who can write the directory swap
// the file in between.
#ifndef ACLD_DAEMON_SERVER_LOG_FILE_H_
#define ACLD_DAEMON_SERVER_LOG_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "spdlog/sinks/sink.h"

namespace acld::server {

// A sink appending to `path` (created 0600), or why it cannot be one.
absl::StatusOr<std::shared_ptr<spdlog::sinks::sink>> OpenLogFile(const std::string& path);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_LOG_FILE_H_
