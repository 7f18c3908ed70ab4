// Built-in kernels a vendor runtime offers by name (acld's own sim extension,
// aclsimLaunchKernel, in a vendor library that has it: the stand-in vendor
// runtime). A real CANN runtime has none; the device then has no built-in
// kernels.
#ifndef ACLD_HAL_ACL_ACL_BUILTIN_KERNELS_H_
#define ACLD_HAL_ACL_ACL_BUILTIN_KERNELS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hal/acl/vendor_api.h"
#include "hal/executable.h"

namespace hal::acl {

class AclBuiltinFunction : public Function {
 public:
  AclBuiltinFunction(std::string name, uint32_t arg_count)
      : name_(std::move(name)), arg_count_(arg_count) {}

  const std::string& name() const override { return name_; }
  std::optional<uint64_t> args_size() const override { return uint64_t{arg_count_} * 8; }
  // Opaque to the daemon, as every vendor kernel (docs/security.md).
  absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t block_dim,
                                                  absl::string_view args) const override;

 private:
  const std::string name_;
  const uint32_t arg_count_;
};

class AclBuiltinKernels : public Executable {
 public:
  // The vendor's built-in kernels; nullptr when it has none.
  static std::unique_ptr<AclBuiltinKernels> FromVendor(const VendorApi& api);

  absl::StatusOr<const Function*> GetFunction(absl::string_view name) const override;
  std::vector<const Function*> Functions() const override;

 private:
  std::map<std::string, std::unique_ptr<AclBuiltinFunction>, std::less<>> functions_;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_BUILTIN_KERNELS_H_
