// Client-chosen text (command lines, kernel names, messages that echo a
// request) made safe to store, log and show: every byte that is not
// printable ASCII becomes \xNN (a backslash becomes \\), and the result is
// cut to a bound. A hostile process cannot forge log lines, move an
// operator's cursor or blow up `aclctl status` through it.
#ifndef ACLD_DAEMON_SERVER_TEXT_SANITIZER_H_
#define ACLD_DAEMON_SERVER_TEXT_SANITIZER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace acld::server {

// Longest command line a session keeps (bytes read from /proc/<pid>/cmdline).
inline constexpr size_t kMaxCommandBytes = 256;
// Longest client-chosen text in one log line.
inline constexpr size_t kMaxLoggedTextBytes = 512;

// `text` with control characters, DEL, non-ASCII bytes and backslashes
// escaped, at most `max_bytes` long (an escape is never split); when cut,
// it ends with "..." (within the bound).
std::string SanitizeText(absl::string_view text, size_t max_bytes = kMaxLoggedTextBytes);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_TEXT_SANITIZER_H_
