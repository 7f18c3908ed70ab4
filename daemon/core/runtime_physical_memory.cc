// Virtual address management and physical memory sharing: the runtime's side
// of daemon/core/physical_memory.h. What creates something checks, under the
// runtime's lock, that the session still lives, so that nothing is made for
// a session that already ended; the importer's identity comes from its
// session, never from its request.
#include "daemon/core/runtime.h"
#include "proto/acl/status_macros.h"

namespace acld {

absl::StatusOr<uint64_t> Runtime::MallocPhysical(SessionId id, int32_t device, uint64_t size,
                                                 bool huge_pages) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device));
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_RETURN_IF_ERROR(FindSession(id).status());
  }
  // Allocated with no lock of the runtime's held, as Malloc: the device may
  // take its time, and a writer waiting for the lock would hold every
  // reader back meanwhile.
  absl::StatusOr<uint64_t> handle = physical_.Allocate(id, device, size, huge_pages);
  if (!handle.ok()) return handle;
  absl::Status live;
  {
    absl::ReaderMutexLock lock(&mu_);
    live = FindSession(id).status();
  }
  if (!live.ok()) {
    // The session ended meanwhile (CloseSession let go of what it held
    // then): what it was just given goes too, here, with no lock held.
    PhysicalMemory::Dropped dropped = physical_.SessionEnded(id);
    return live;
  }
  return handle;
}

absl::Status Runtime::FreePhysical(SessionId id, uint64_t handle) {
  return physical_.Free(id, handle);
}

absl::StatusOr<uint64_t> Runtime::RetainPhysical(SessionId id, uint64_t address) {
  return physical_.Retain(id, address);
}

absl::StatusOr<PhysicalMemory::Properties> Runtime::PhysicalProperties(SessionId id,
                                                                      uint64_t handle) {
  return physical_.PropertiesOf(id, handle);
}

absl::StatusOr<bool> Runtime::MemoryAccess(SessionId id, uint64_t address, int32_t device) {
  return physical_.Readable(id, address, device);
}

absl::StatusOr<uint64_t> Runtime::ReserveAddresses(SessionId id, int32_t device, uint64_t size) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device));
  absl::ReaderMutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return physical_.Reserve(id, device, size);
}

absl::Status Runtime::ReleaseAddresses(SessionId id, uint64_t address) {
  return physical_.Release(id, address);
}

absl::Status Runtime::MapMemory(SessionId id, uint64_t address, uint64_t size, uint64_t offset,
                                uint64_t handle, bool accessible) {
  return physical_.Map(id, address, size, offset, handle, accessible);
}

absl::Status Runtime::UnmapMemory(SessionId id, uint64_t address) {
  return physical_.Unmap(id, address);
}

absl::Status Runtime::SetMemoryAccess(SessionId id, uint64_t address, uint64_t size,
                                      int32_t device, bool readwrite) {
  return physical_.SetAccess(id, address, size, device, readwrite);
}

absl::StatusOr<uint64_t> Runtime::ExportPhysical(SessionId id, uint64_t handle,
                                                 bool pid_validation) {
  return physical_.Export(id, handle, pid_validation);
}

absl::Status Runtime::SetShareablePids(SessionId id, uint64_t shareable,
                                       const std::vector<int32_t>& pids) {
  return physical_.SetImportPids(id, shareable, pids);
}

absl::StatusOr<uint64_t> Runtime::ImportPhysical(SessionId id, uint64_t shareable,
                                                 int32_t device) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device));
  ACL_ASSIGN_OR_RETURN(const KernelIdentity importer, WhitelistIdentity(id));
  // Under the lock: a session ending meanwhile (CloseSession) must not be
  // left an import.
  absl::ReaderMutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return physical_.Import(importer, shareable, device);
}

}  // namespace acld
