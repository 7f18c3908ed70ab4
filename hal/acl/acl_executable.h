// A kernel binary loaded into the vendor (aclrtBinaryLoadFromData) and its
// functions (aclrtBinaryGetFunction).
//
// The binary is the application's (hostile input): only the vendor parses it.
// A real device's kernels take opaque argument blocks whose pointers the
// backend cannot see, so a Function knows neither its argument size nor the
// memory a launch touches (docs/security.md). The vendor offers no way to list
// a binary's functions, so Functions() lists those looked up so far.
#ifndef ACLD_HAL_ACL_ACL_EXECUTABLE_H_
#define ACLD_HAL_ACL_ACL_EXECUTABLE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_context.h"
#include "hal/executable.h"

namespace hal::acl {

class AclFunction : public Function {
 public:
  AclFunction(std::string name, VendorFuncHandle handle, int32_t device)
      : name_(std::move(name)), handle_(handle), device_(device) {}

  const std::string& name() const override { return name_; }
  std::optional<uint64_t> args_size() const override { return std::nullopt; }
  absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t block_dim,
                                                  absl::string_view args) const override;

  VendorFuncHandle handle() const { return handle_; }
  int32_t device() const { return device_; }

 private:
  const std::string name_;
  const VendorFuncHandle handle_;
  const int32_t device_;
};

class AclExecutable : public Executable {
 public:
  static absl::StatusOr<std::shared_ptr<AclExecutable>> Load(std::shared_ptr<DeviceContext> context,
                                                             absl::string_view binary);
  // aclrtBinaryUnLoad (unless the device was released meanwhile).
  ~AclExecutable() override;

  // NotFound (with the vendor's code) for a name the binary lacks.
  absl::StatusOr<const Function*> GetFunction(absl::string_view name) const override;
  std::vector<const Function*> Functions() const override;

 private:
  AclExecutable(std::shared_ptr<DeviceContext> context, VendorBinHandle binary)
      : context_(std::move(context)), binary_(binary) {}

  const std::shared_ptr<DeviceContext> context_;
  const VendorBinHandle binary_;
  mutable absl::Mutex mu_;
  mutable std::map<std::string, std::unique_ptr<AclFunction>, std::less<>> functions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_EXECUTABLE_H_
