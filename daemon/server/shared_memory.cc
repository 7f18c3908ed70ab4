#include "daemon/server/shared_memory.h"

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/server/client_memory.h"
#include "proto/acl/acl_status.h"

namespace acld::server {

struct SharedMemoryRegistry::Usage {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> segments{0};
  std::atomic<bool> staging_mapped{false};  // the reserved staging segment is taken
};

struct SharedMemoryRegistry::Mapping {
  std::unique_ptr<MappedClientMemory> memory;
  std::shared_ptr<Usage> usage;
  std::shared_ptr<void> registration;  // with the devices, undone before the unmap
  std::shared_ptr<void> shared_hold;   // its place in the tenant's and host's counts
  bool staging = false;           // registered as a staging area (read next)
  bool reserved_staging = false;  // and holds the session's reservation
  ~Mapping() {
    if (memory == nullptr) return;
    registration.reset();
    const uint64_t size = memory->size();
    memory.reset();
    usage->bytes.fetch_sub(size);
    usage->segments.fetch_sub(1);
    if (reserved_staging) usage->staging_mapped.store(false);
  }
};

SharedMemoryRegistry::SharedMemoryRegistry(SharedMemoryLimits limits,
                                           HostMemoryRegistrar registrar)
    : limits_(limits), registrar_(std::move(registrar)), usage_(std::make_shared<Usage>()) {}

// Mappings still used by in-flight copies stay until those copies end.
SharedMemoryRegistry::~SharedMemoryRegistry() = default;

absl::StatusOr<uint64_t> SharedMemoryRegistry::Register(ReceivedMemory memory, bool staging) {
  const uint64_t size = memory.size;
  // The desk verified the seals; checked again because nothing else stands
  // between a shrinkable file and a SIGBUS in acld.
  absl::Status sealed = CheckSealedMemory(memory.fd.get(), size);
  if (!sealed.ok()) return AclStatus(ACL_ERROR_INVALID_PARAM, sealed.message());

  absl::MutexLock lock(&mu_);
  // Every reservation happens under mu_ and releases only lower the counts,
  // so checking and then adding cannot overshoot.
  const uint64_t segments = usage_->segments.load();
  if (segments >= limits_.max_segments) {
    return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     absl::StrCat("this session already has ", segments,
                                  " shared memory segments mapped; at most ", limits_.max_segments,
                                  " are allowed"));
  }
  const uint64_t bytes = usage_->bytes.load();
  if (size > limits_.max_bytes || bytes > limits_.max_bytes - size) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("shared memory of ", size, " bytes would exceed this session's limit: ", bytes,
                     " of ", limits_.max_bytes,
                     " bytes are mapped (acld --max_host_memory_per_session)"));
  }
  const bool reserved = staging && !usage_->staging_mapped.load();
  std::shared_ptr<void> shared_hold;
  if (limits_.shared != nullptr) {
    absl::StatusOr<std::shared_ptr<void>> taken = limits_.shared->Take(limits_.tenant, reserved);
    if (!taken.ok()) return taken.status();
    shared_hold = *std::move(taken);
  }
  absl::StatusOr<std::unique_ptr<MappedClientMemory>> mapped =
      MappedClientMemory::Map(memory, size, limits_.end_session);
  if (!mapped.ok()) {
    // Memory with holes is the client's mistake; memory acld could not map,
    // or seal in time, or for want of a thread, is not.
    return AclStatus(absl::IsInvalidArgument(mapped.status()) ? ACL_ERROR_INVALID_PARAM
                                                              : ACL_ERROR_RT_MEMORY_ALLOCATION,
                     mapped.status().message());
  }
  usage_->bytes.fetch_add(size);
  usage_->segments.fetch_add(1);
  if (reserved) usage_->staging_mapped.store(true);
  auto mapping = std::make_shared<Mapping>();
  mapping->staging = staging;
  mapping->reserved_staging = reserved;
  mapping->memory = *std::move(mapped);
  mapping->usage = usage_;
  mapping->shared_hold = std::move(shared_hold);
  if (registrar_) mapping->registration = registrar_(mapping->memory->base(), size);
  const uint64_t segment = next_segment_++;
  segments_[segment] = std::move(mapping);
  return segment;
}

absl::Status SharedMemoryRegistry::Unregister(uint64_t segment) {
  std::shared_ptr<Mapping> unmapped;  // unmapped after the lock is released
  absl::MutexLock lock(&mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("shared memory segment ", segment, " is not registered"));
  }
  unmapped = std::move(it->second);
  segments_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<HostSpan> SharedMemoryRegistry::Resolve(uint64_t segment, uint64_t offset,
                                                       uint64_t count) const {
  absl::MutexLock lock(&mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end() || offset > it->second->memory->size() ||
      count > it->second->memory->size() - offset) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("host range (segment ", segment, ", offset ", offset, ", ", count,
                                  " bytes) is outside this process's shared memory"));
  }
  if (it->second->memory->given_up()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("shared memory segment ", segment,
                                  " is refused: acld gave up filling its holes (this process no "
                                  "longer maps it, or keeps punching holes in it)"));
  }
  HostSpan span{it->second->memory->base() + offset, it->second};
  span.read_next = it->second->staging;  // the client copies out of its slots at once
  return span;
}

uint64_t SharedMemoryRegistry::mapped_bytes() const { return usage_->bytes.load(); }

size_t SharedMemoryRegistry::segment_count() const {
  return static_cast<size_t>(usage_->segments.load());
}

}  // namespace acld::server
