#include "daemon/server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld::server {

struct SharedMemoryRegistry::Mapping {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
};

absl::StatusOr<uint64_t> SharedMemoryRegistry::Register(const std::string& name, uint64_t size,
                                                        uid_t owner_uid) {
  // Only the names the client library makes: no paths, no other objects.
  if (!absl::StartsWith(name, "/acld-") || name.find('/', 1) != std::string::npos ||
      name.size() > 200 || size == 0 || size > (uint64_t{1} << 40)) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("shared memory '", name, "' of ", size, " bytes is not valid"));
  }
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("cannot open shared memory '", name, "': ", std::strerror(errno)));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || info.st_uid != owner_uid) {
    close(fd);
    return AclStatus(
        ACL_ERROR_RT_NO_PERMISSION,
        absl::StrCat("shared memory '", name, "' does not belong to this process's user"));
  }
  if (static_cast<uint64_t>(info.st_size) < size) {
    close(fd);
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("shared memory '", name, "' is smaller than ", size, " bytes"));
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     absl::StrCat("cannot map shared memory '", name, "': ", std::strerror(errno)));
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->base = static_cast<uint8_t*>(base);
  mapping->size = size;
  absl::MutexLock lock(&mu_);
  const uint64_t segment = next_segment_++;
  segments_[segment] = std::move(mapping);
  return segment;
}

absl::Status SharedMemoryRegistry::Unregister(uint64_t segment) {
  absl::MutexLock lock(&mu_);
  if (segments_.erase(segment) == 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("shared memory segment ", segment, " is not registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HostSpan> SharedMemoryRegistry::Resolve(uint64_t segment, uint64_t offset,
                                                       uint64_t count) const {
  absl::MutexLock lock(&mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end() || offset > it->second->size || count > it->second->size - offset) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("host range (segment ", segment, ", offset ", offset, ", ", count,
                                  " bytes) is outside this process's shared memory"));
  }
  return HostSpan{it->second->base + offset, it->second};
}

uint64_t SharedMemoryRegistry::mapped_bytes() const {
  absl::MutexLock lock(&mu_);
  uint64_t bytes = 0;
  for (const auto& [segment, mapping] : segments_) bytes += mapping->size;
  return bytes;
}

}  // namespace acld::server
