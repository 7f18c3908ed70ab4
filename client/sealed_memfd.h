// Memory the client shares with acld: a memfd sealed to its size (it can
// never shrink or grow, so acld's mapping of it never faults), its pages
// written (allocated, charged to this process; acld seals it against hole
// punching once mapped, so that it never pays for them), mapped shared here. The caller hands `fd` over on the identity socket, then closes it;
// the mapping keeps this process's reference.
#ifndef ACLD_CLIENT_SEALED_MEMFD_H_
#define ACLD_CLIENT_SEALED_MEMFD_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace acl_client {

struct SealedMemfd {
  int fd = -1;
  void* base = nullptr;  // `size` bytes, read-write, shared
};

// A memfd named `name` of `size` bytes; the error says which step failed.
absl::StatusOr<SealedMemfd> CreateSealedMemfd(const char* name, uint64_t size);

}  // namespace acl_client

#endif  // ACLD_CLIENT_SEALED_MEMFD_H_
