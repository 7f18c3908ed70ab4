// A session's command line (and name) as the kernel shows them, never as the
// client says.
#ifndef ACLD_DAEMON_SERVER_PROCESS_COMMAND_H_
#define ACLD_DAEMON_SERVER_PROCESS_COMMAND_H_

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "daemon/server/text_sanitizer.h"

namespace acld::server {

// The first `max_bytes` of /proc/<pid>/cmdline, arguments joined by spaces,
// sanitized (SanitizeText) to at most `max_bytes`. Empty when the process is
// gone or its command line cannot be read.
std::string ProcessCommand(pid_t pid, size_t max_bytes = kMaxCommandBytes);

// /proc/<pid>/comm (the name the kernel keeps in the process's task, never
// read from its memory), sanitized; empty when the process is gone.
std::string ProcessName(pid_t pid);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_PROCESS_COMMAND_H_
