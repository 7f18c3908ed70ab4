// aclsysGetVersionStr / aclsysGetVersionNum. The "runtime" package (and
// "cann", its other name in CANN) is the CANN runtime API whose headers
// libascendcl follows: a program that picks calls by this version picks the
// ones these headers declare (docs/api-compat.md). Works before aclInit.
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

namespace {

struct PackageVersion {
  int32_t major;
  int32_t minor;
  int32_t patch;
};

constexpr PackageVersion kRuntimeApi{9, 1, 0};

// CANN's numbering: major x 10^7 + minor x 10^5 + patch x 10^3.
int32_t VersionNumber(const PackageVersion& version) {
  return version.major * 10000000 + version.minor * 100000 + version.patch * 1000;
}

// Longer names are no package's; reading stops there.
constexpr size_t kMaxPackageName = 64;

absl::StatusOr<PackageVersion> FindPackage(const char* api, const char* name) {
  if (name == nullptr) return acl_client::NullArgument(api, "pkgName");
  const std::string package(name, strnlen(name, kMaxPackageName + 1));
  if (package == "runtime" || package == "cann") return kRuntimeApi;
  return acld::AclStatus(
      ACL_ERROR_INVALID_FILE,
      absl::StrCat(api, ": no package named \"", package.substr(0, kMaxPackageName),
                   "\" here; acld reports \"runtime\" and \"cann\" (the CANN runtime API its "
                   "headers follow), not the versions of a driver or firmware"));
}

}  // namespace

extern "C" {

aclError aclsysGetVersionStr(char* pkgName, char* versionStr) {
  return acl_client::Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(PackageVersion version, FindPackage("aclsysGetVersionStr", pkgName));
    if (versionStr == nullptr) return acl_client::NullArgument("aclsysGetVersionStr", "versionStr");
    const std::string text = absl::StrCat(version.major, ".", version.minor, ".", version.patch);
    // The caller's buffer holds ACL_PKG_VERSION_MAX_SIZE bytes, as CANN asks.
    static_assert(sizeof("99.99.99") <= ACL_PKG_VERSION_MAX_SIZE, "a version fits");
    std::memcpy(versionStr, text.c_str(), text.size() + 1);
    return absl::OkStatus();
  });
}

aclError aclsysGetVersionNum(char* pkgName, int32_t* versionNum) {
  return acl_client::Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(PackageVersion version, FindPackage("aclsysGetVersionNum", pkgName));
    if (versionNum == nullptr) return acl_client::NullArgument("aclsysGetVersionNum", "versionNum");
    *versionNum = VersionNumber(version);
    return absl::OkStatus();
  });
}

}  // extern "C"
