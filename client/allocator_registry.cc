#include "client/allocator_registry.h"

#include "absl/strings/str_cat.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

absl::Status UnknownDesc(const char* api) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(api, ": the allocator descriptor is NULL or not live"));
}

}  // namespace

AllocatorRegistry& AllocatorRegistry::Get() {
  static AllocatorRegistry* registry = new AllocatorRegistry;
  return *registry;
}

AllocatorDesc* AllocatorRegistry::CreateDesc() {
  auto* desc = new AllocatorDesc;
  absl::MutexLock lock(&mu_);
  descs_.insert(desc);
  return desc;
}

absl::Status AllocatorRegistry::DestroyDesc(aclrtAllocatorDesc handle) {
  auto* desc = static_cast<AllocatorDesc*>(handle);
  absl::MutexLock lock(&mu_);
  if (descs_.erase(desc) == 0) return UnknownDesc("aclrtAllocatorDestroyDesc");
  delete desc;  // registrations hold copies, so they stay valid
  return absl::OkStatus();
}

absl::Status AllocatorRegistry::UpdateDesc(aclrtAllocatorDesc handle, const char* api,
                                           const std::function<void(AllocatorDesc&)>& update) {
  auto* desc = static_cast<AllocatorDesc*>(handle);
  absl::MutexLock lock(&mu_);
  if (descs_.count(desc) == 0) return UnknownDesc(api);
  update(*desc);
  return absl::OkStatus();
}

absl::Status AllocatorRegistry::Register(uint64_t stream, aclrtAllocatorDesc handle) {
  auto* desc = static_cast<AllocatorDesc*>(handle);
  absl::MutexLock lock(&mu_);
  if (descs_.count(desc) == 0) return UnknownDesc("aclrtAllocatorRegister");
  if (desc->obj == nullptr || desc->alloc == nullptr || desc->free == nullptr ||
      desc->get_addr_from_block == nullptr) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "aclrtAllocatorRegister: the descriptor needs its allocator object, "
                           "alloc, free and getAddrFromBlock functions (advise is optional)");
  }
  streams_[stream] = Registration{handle, *desc};
  return absl::OkStatus();
}

absl::StatusOr<AllocatorRegistry::Registration> AllocatorRegistry::Find(uint64_t stream) const {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           "The stream is not registered with any allocator");
  }
  return it->second;
}

bool AllocatorRegistry::Unregister(uint64_t stream) {
  absl::MutexLock lock(&mu_);
  return streams_.erase(stream) > 0;
}

}  // namespace acl_client
