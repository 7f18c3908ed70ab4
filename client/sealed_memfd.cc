#include "client/sealed_memfd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace acl_client {

absl::StatusOr<SealedMemfd> CreateSealedMemfd(const char* name, uint64_t size) {
  // A memfd, not a named object: it needs no shared /dev/shm (containers),
  // and nobody else can open it.
  const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  // Its pages are allocated here, charged to this process: acld refuses
  // memory with holes, which its own faults would fill at its cost. Not
  // sealed with F_SEAL_SEAL: acld seals it against hole punching once it has
  // mapped it (F_SEAL_FUTURE_WRITE, which would refuse acld's writable
  // mapping if set before).
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("cannot size, allocate and seal it: ", error));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("cannot map it: ", error));
  }
  return SealedMemfd{fd, base};
}

}  // namespace acl_client
