// The names of things one process shares with another (an export of device
// memory, an IPC event, physical memory): capabilities, so unguessable — the
// kernel's randomness, never a counter or an address.
#ifndef ACLD_DAEMON_CORE_CAPABILITY_KEY_H_
#define ACLD_DAEMON_CORE_CAPABILITY_KEY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace acld {

constexpr size_t kCapabilityKeyChars = 64;

// 32 random bytes as 64 lowercase hex digits.
absl::StatusOr<std::string> NewCapabilityKey();

// Where CANN's API holds a capability in 64 bits (aclrtMemExportToShareableHandle):
// 64 random bits, never 0.
absl::StatusOr<uint64_t> NewCapabilityNumber();

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_CAPABILITY_KEY_H_
