#include "hal/acl/acl_executable.h"

#include "absl/strings/str_cat.h"
#include "hal/acl/vendor_status.h"

namespace hal::acl {

absl::StatusOr<std::vector<DeviceRange>> AclFunction::Ranges(uint32_t, absl::string_view) const {
  return WithCanonicalCode(
      absl::StatusCode::kUnimplemented,
      BackendError(
          ACL_ERROR_FEATURE_UNSUPPORTED,
          absl::StrCat("kernel ", name_, ": the arguments of a real device's kernel are opaque")));
}

absl::StatusOr<std::shared_ptr<AclExecutable>> AclExecutable::Load(
    std::shared_ptr<DeviceContext> context, absl::string_view binary) {
  absl::Status status = context->MakeCurrent();
  if (!status.ok()) return status;
  VendorBinHandle handle = nullptr;
  status = CheckVendor(
      context->api().aclrtBinaryLoadFromData(binary.data(), binary.size(), nullptr, &handle),
      "aclrtBinaryLoadFromData");
  if (!status.ok()) return status;
  return std::shared_ptr<AclExecutable>(new AclExecutable(std::move(context), handle));
}

AclExecutable::~AclExecutable() {
  if (context_->MakeCurrent().ok()) context_->api().aclrtBinaryUnLoad(binary_);
}

absl::StatusOr<const Function*> AclExecutable::GetFunction(absl::string_view name) const {
  if (name.empty() || name.find('\0') != absl::string_view::npos) {
    // The vendor takes a C string: a NUL would look up another name.
    return WithCanonicalCode(
        absl::StatusCode::kNotFound,
        BackendError(ACL_ERROR_INVALID_PARAM, "a kernel name must be non-empty, without NUL"));
  }
  absl::MutexLock lock(&mu_);
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second.get();
  absl::Status status = context_->MakeCurrent();
  if (!status.ok()) return status;
  const std::string key(name);
  VendorFuncHandle handle = nullptr;
  status = CheckVendor(context_->api().aclrtBinaryGetFunction(binary_, key.c_str(), &handle),
                       "aclrtBinaryGetFunction");
  if (!status.ok()) return WithCanonicalCode(absl::StatusCode::kNotFound, status);
  auto function = std::make_unique<AclFunction>(key, handle, context_->device());
  const Function* found = function.get();
  functions_.emplace(key, std::move(function));
  return found;
}

std::vector<const Function*> AclExecutable::Functions() const {
  absl::MutexLock lock(&mu_);
  std::vector<const Function*> functions;
  for (const auto& [name, function] : functions_) functions.push_back(function.get());
  return functions;
}

}  // namespace hal::acl
