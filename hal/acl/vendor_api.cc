#include "hal/acl/vendor_api.h"

#include <dlfcn.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/acl/vendor_status.h"

namespace hal::acl {

absl::StatusOr<std::shared_ptr<const VendorApi>> VendorApi::Load(const std::string& path,
                                                                 bool deep_bind) {
  if (path.empty()) {
    return BackendError(ACL_ERROR_INVALID_PARAM,
                        "the acl backend needs the vendor AscendCL library (vendor_library)");
  }
  int flags = RTLD_NOW | RTLD_LOCAL;
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer runtime cannot work with RTLD_DEEPBIND. Sanitizer builds
  // are test builds, whose stand-in vendor library binds its own symbols
  // itself (-Bsymbolic); a production build always deep-binds.
  (void)deep_bind;
#else
  if (deep_bind) flags |= RTLD_DEEPBIND;
#endif
  dlerror();
  void* handle = dlopen(path.c_str(), flags);
  if (handle == nullptr) {
    const char* why = dlerror();
    return BackendError(ACL_ERROR_INVALID_FILE,
                        absl::StrCat("cannot load the vendor AscendCL library ", path, ": ",
                                     why != nullptr ? why : "unknown dlopen error"));
  }

  auto api = std::make_shared<VendorApi>();
  api->library = path;
  api->handle = handle;
  std::vector<std::string> missing;
#define ACLD_RESOLVE_REQUIRED(name, ...)                                               \
  api->name = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(dlsym(handle, #name)); \
  if (api->name == nullptr) missing.push_back(#name);
#define ACLD_RESOLVE_OPTIONAL(name, ...) \
  api->name = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(dlsym(handle, #name));
  ACLD_VENDOR_REQUIRED_SYMBOLS(ACLD_RESOLVE_REQUIRED)
  ACLD_VENDOR_OPTIONAL_SYMBOLS(ACLD_RESOLVE_OPTIONAL)
#undef ACLD_RESOLVE_REQUIRED
#undef ACLD_RESOLVE_OPTIONAL

  if (!missing.empty()) {
    // Nothing of the library ran yet (only its constructors), so it can go.
    dlclose(handle);
    return BackendError(
        ACL_ERROR_API_NOT_SUPPORT,
        absl::StrCat("the vendor AscendCL library ", path, " lacks required symbol",
                     missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", ")));
  }
  return std::shared_ptr<const VendorApi>(std::move(api));
}

}  // namespace hal::acl
