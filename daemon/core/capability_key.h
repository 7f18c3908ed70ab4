// The names of things one process shares with another (an export of device
// memory, an IPC event): capabilities, so unguessable — 32 bytes of the
// kernel's randomness as 64 lowercase hex digits, never a counter or an
// address.
#ifndef ACLD_DAEMON_CORE_CAPABILITY_KEY_H_
#define ACLD_DAEMON_CORE_CAPABILITY_KEY_H_

#include <string>

#include "absl/status/statusor.h"

namespace acld {

constexpr size_t kCapabilityKeyChars = 64;

absl::StatusOr<std::string> NewCapabilityKey();

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_CAPABILITY_KEY_H_
