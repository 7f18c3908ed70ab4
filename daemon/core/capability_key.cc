#include "daemon/core/capability_key.h"

#include <errno.h>
#include <sys/random.h>

#include "absl/strings/escaping.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

absl::Status FillRandom(void* bytes, size_t size) {
  size_t filled = 0;
  while (filled < size) {
    const ssize_t got = getrandom(static_cast<char*>(bytes) + filled, size - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "the kernel gave no randomness for a key");
    }
    filled += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> NewCapabilityKey() {
  char random[kCapabilityKeyChars / 2];
  ACL_RETURN_IF_ERROR(FillRandom(random, sizeof(random)));
  return absl::BytesToHexString(absl::string_view(random, sizeof(random)));
}

absl::StatusOr<uint64_t> NewCapabilityNumber() {
  uint64_t number = 0;
  while (number == 0) ACL_RETURN_IF_ERROR(FillRandom(&number, sizeof(number)));
  return number;
}

}  // namespace acld
