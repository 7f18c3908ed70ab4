// What acld, aclctl and the device plugin share at start-up: `--help` lists
// the flags defined in the program's own main file. Abseil's default looks
// for a file named after the binary, which none of them has.
#ifndef ACLD_PROTO_ACL_HELP_LISTS_OWN_FLAGS_H_
#define ACLD_PROTO_ACL_HELP_LISTS_OWN_FLAGS_H_

#include <string>

#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace acld {

// `main_file`: the path of the program's main file from the repository's
// root, e.g. "daemon/main.cc". Call before absl::ParseCommandLine.
inline void HelpListsOwnFlags(absl::string_view main_file) {
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [main_file = std::string(main_file)](absl::string_view file) {
    return absl::EndsWith(file, main_file);
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
}

}  // namespace acld

#endif  // ACLD_PROTO_ACL_HELP_LISTS_OWN_FLAGS_H_
