#include "hal/acl/host_registry.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "hal/acl/vendor_status.h"

namespace hal::acl {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

absl::Status HostRegistry::Register(const DeviceContext& context, void* address, uint64_t bytes) {
  const uint64_t start = reinterpret_cast<uintptr_t>(address);
  if (address == nullptr || bytes == 0 || bytes > UINT64_MAX - start - PageSize()) {
    return BackendError(ACL_ERROR_INVALID_PARAM, "no host memory to register");
  }
  const uint64_t first = start / PageSize() * PageSize();
  const uint64_t end = (start + bytes + PageSize() - 1) / PageSize() * PageSize();

  absl::MutexLock lock(&mu_);
  auto it = pages_.find(first);
  if (it != pages_.end() && it->second.end >= end) {
    ++it->second.references;
  } else {
    if (it != pages_.end()) {
      return BackendError(ACL_ERROR_INVALID_PARAM,
                          "host memory overlaps a smaller registration at the same page");
    }
    absl::Status status = context.MakeCurrent();
    if (!status.ok()) return status;
    const VendorApi& api = context.api();
    void* base = reinterpret_cast<void*>(static_cast<uintptr_t>(first));
    if (api.aclrtHostUnregister == nullptr ||
        (api.aclrtHostRegisterV2 == nullptr && api.aclrtHostRegister == nullptr)) {
      // Copies from this memory still work; the vendor makes them synchronous.
      return BackendError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                          "the vendor runtime cannot page-lock host memory (aclrtHostRegister)");
    }
    if (api.aclrtHostRegisterV2 != nullptr) {
      status = CheckVendor(api.aclrtHostRegisterV2(base, end - first, kVendorHostRegPinned),
                           "aclrtHostRegisterV2");
    } else {
      void* mapped = nullptr;
      status =
          CheckVendor(api.aclrtHostRegister(base, end - first, kVendorHostRegisterMapped, &mapped),
                      "aclrtHostRegister");
    }
    if (!status.ok()) return status;
    pages_[first] = Pages{end, 1};
  }
  auto& caller = callers_[start];
  caller.first = first;
  ++caller.second;
  return absl::OkStatus();
}

absl::Status HostRegistry::Unregister(const DeviceContext& context, void* address) {
  const uint64_t start = reinterpret_cast<uintptr_t>(address);
  absl::MutexLock lock(&mu_);
  auto caller = callers_.find(start);
  if (caller == callers_.end()) {
    return BackendError(ACL_ERROR_INVALID_PARAM,
                        absl::StrCat("host memory at ", start, " is not registered"));
  }
  const uint64_t first = caller->second.first;
  if (--caller->second.second == 0) callers_.erase(caller);
  auto pages = pages_.find(first);
  if (pages == pages_.end() || --pages->second.references > 0) return absl::OkStatus();
  pages_.erase(pages);
  absl::Status status = context.MakeCurrent();
  if (!status.ok()) return status;
  return CheckVendor(
      context.api().aclrtHostUnregister(reinterpret_cast<void*>(static_cast<uintptr_t>(first))),
      "aclrtHostUnregister");
}

bool HostRegistry::Covers(const void* address, uint64_t bytes) const {
  const uint64_t start = reinterpret_cast<uintptr_t>(address);
  absl::MutexLock lock(&mu_);
  auto it = pages_.upper_bound(start);
  if (it == pages_.begin()) return false;
  --it;
  return start >= it->first && bytes <= it->second.end - start && start < it->second.end;
}

}  // namespace hal::acl
