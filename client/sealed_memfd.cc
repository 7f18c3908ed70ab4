#include "client/sealed_memfd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/spoken_protocol.h"

namespace acl_client {
namespace {

// Writes every page of the mapping (zeros stay zeros), so that the file has
// no hole: acld refuses memory with holes, which its own faults would fill
// at its cost (docs/security.md). Charged to this process, as its memory
// is. Not fallocate: a page it allocates reads as a hole until written.
absl::Status Populate(void* base, uint64_t size) {
  while (madvise(base, size, MADV_POPULATE_WRITE) != 0) {
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno != EINVAL) {
      return absl::InternalError(
          absl::StrCat("cannot allocate its pages: ", std::strerror(errno)));
    }
    // A kernel before 5.14: touched page by page instead.
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    auto* bytes = static_cast<volatile uint8_t*>(base);
    for (uint64_t offset = 0; offset < size; offset += page) bytes[offset] = 0;
    break;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SealedMemfd> CreateSealedMemfd(const char* name, uint64_t size) {
  // A memfd, not a named object: it needs no shared /dev/shm (containers),
  // and nobody else can open it.
  const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  // Not sealed with F_SEAL_SEAL: acld seals it against hole punching once it
  // has mapped it (F_SEAL_FUTURE_WRITE, which would refuse acld's writable
  // mapping if set before). The previous protocol's clients sealed it for
  // good and wrote none of its pages (spoken_protocol.h).
  constexpr bool kPrevious = kSpokenProtocolVersion < acld::kProtocolVersion;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | (kPrevious ? F_SEAL_SEAL : 0)) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("cannot size and seal it: ", error));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("cannot map it: ", error));
  }
  absl::Status populated = kPrevious ? absl::OkStatus() : Populate(base, size);
  if (!populated.ok()) {
    munmap(base, size);
    close(fd);
    return populated;
  }
  return SealedMemfd{fd, base};
}

}  // namespace acl_client
