#include "daemon/core/capability_key.h"

#include <errno.h>
#include <sys/random.h>

#include "absl/strings/escaping.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

absl::StatusOr<std::string> NewCapabilityKey() {
  char random[kCapabilityKeyChars / 2];
  size_t filled = 0;
  while (filled < sizeof(random)) {
    const ssize_t got = getrandom(random + filled, sizeof(random) - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "the kernel gave no randomness for a key");
    }
    filled += static_cast<size_t>(got);
  }
  return absl::BytesToHexString(absl::string_view(random, sizeof(random)));
}

}  // namespace acld
