#include "hal/acl/acl_builtin_kernels.h"

#include "absl/strings/str_cat.h"
#include "hal/acl/vendor_status.h"

namespace hal::acl {

absl::StatusOr<std::vector<DeviceRange>> AclBuiltinFunction::Ranges(uint32_t,
                                                                    absl::string_view) const {
  return absl::UnimplementedError("the vendor's kernels are opaque to the daemon");
}

std::unique_ptr<AclBuiltinKernels> AclBuiltinKernels::FromVendor(const VendorApi& api) {
  if (api.aclsimLaunchKernel == nullptr || api.aclsimGetKernelCount == nullptr ||
      api.aclsimGetKernel == nullptr) {
    return nullptr;
  }
  uint32_t count = 0;
  if (api.aclsimGetKernelCount(&count) != ACL_SUCCESS || count == 0) return nullptr;
  auto kernels = std::unique_ptr<AclBuiltinKernels>(new AclBuiltinKernels);
  for (uint32_t index = 0; index < count && index < 1024; ++index) {
    const char* name = nullptr;
    uint32_t arg_count = 0;
    if (api.aclsimGetKernel(index, &name, &arg_count) != ACL_SUCCESS || name == nullptr) continue;
    kernels->functions_[name] = std::make_unique<AclBuiltinFunction>(name, arg_count);
  }
  return kernels;
}

absl::StatusOr<const Function*> AclBuiltinKernels::GetFunction(absl::string_view name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    return BackendError(ACL_ERROR_INVALID_PARAM,
                        absl::StrCat("the vendor has no built-in kernel named ", name));
  }
  return it->second.get();
}

std::vector<const Function*> AclBuiltinKernels::Functions() const {
  std::vector<const Function*> functions;
  for (const auto& [name, function] : functions_) functions.push_back(function.get());
  return functions;
}

}  // namespace hal::acl
