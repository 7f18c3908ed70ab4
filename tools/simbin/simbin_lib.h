// The logic of the simbin tool (main.cc), kept apart so it can be tested.
#ifndef ACLD_TOOLS_SIMBIN_SIMBIN_LIB_H_
#define ACLD_TOOLS_SIMBIN_SIMBIN_LIB_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hal/sim/sim_binary.h"

namespace acld::simbin {

// Turns "function=kernel" arguments into sim binary entries, in order. Each
// argument splits at its first '='. InvalidArgument for an argument without
// '=', for entries ParseSimBinary would refuse (hal/sim/sim_binary.h), and for
// a kernel not in `known_kernels`.
absl::StatusOr<std::vector<hal::sim::SimBinaryEntry>> ParseMappings(
    const std::vector<std::string>& args, const std::set<std::string>& known_kernels);

// Writes `bytes` to `path` through a temporary file in the same directory
// and a rename, so a program loading `path` never sees half a binary.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);

// Reads a whole file of at most `max_bytes`.
absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes);

}  // namespace acld::simbin

#endif  // ACLD_TOOLS_SIMBIN_SIMBIN_LIB_H_
