// What the environment and its devices support: aclGetCannAttributeList /
// aclGetCannAttribute (device 0's backend, as CANN answers for its AI
// processor), aclrtGetDeviceCapability (each device's backend) and
// aclrtCheckArchCompatibility (the devices' SoC). The answers come from acld,
// which asks its backend (docs/api-compat.md); they reach the process with
// its session, so these calls open it if need be.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::Connected;
using acl_client::NullArgument;
using acl_client::Transport;

namespace {

bool Contains(const std::vector<int32_t>& values, int32_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The list aclGetCannAttributeList hands out: it must stay valid until the
// process exits, and each call may find a different session (after a fork).
class AttributeLists {
 public:
  static AttributeLists& Get() {
    static AttributeLists* lists = new AttributeLists;
    return *lists;
  }
  // A list equal to `attributes`, kept for good (one per distinct list).
  const std::vector<aclCannAttr>& Keep(const std::vector<int32_t>& attributes) {
    std::vector<aclCannAttr> list;
    for (int32_t attribute : attributes) list.push_back(static_cast<aclCannAttr>(attribute));
    absl::MutexLock lock(&mu_);
    for (const auto& kept : kept_) {
      if (*kept == list) return *kept;
    }
    kept_.push_back(std::make_unique<std::vector<aclCannAttr>>(std::move(list)));
    return *kept_.back();
  }

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<std::vector<aclCannAttr>>> kept_ ABSL_GUARDED_BY(mu_);
};

bool IsCannAttribute(int attribute) {
  return attribute == ACL_CANN_ATTR_INF_NAN || attribute == ACL_CANN_ATTR_BF16 ||
         attribute == ACL_CANN_ATTR_JIT_COMPILE;
}

}  // namespace

extern "C" {

aclError aclGetCannAttributeList(const aclCannAttr** cannAttrList, size_t* num) {
  return Api([&]() -> absl::Status {
    if (cannAttrList == nullptr) return NullArgument("aclGetCannAttributeList", "cannAttrList");
    if (num == nullptr) return NullArgument("aclGetCannAttributeList", "num");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    const std::vector<aclCannAttr>& list =
        AttributeLists::Get().Keep(transport->Features(0).cann_attributes);
    *cannAttrList = list.data();
    *num = list.size();
    return absl::OkStatus();
  });
}

aclError aclGetCannAttribute(aclCannAttr cannAttr, int32_t* value) {
  return Api([&]() -> absl::Status {
    if (value == nullptr) return NullArgument("aclGetCannAttribute", "value");
    // Read as an int: a value outside the enum may not be read as one.
    const int attribute = acl_client::RawEnum(cannAttr);
    if (!IsCannAttribute(attribute)) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat("aclGetCannAttribute: ", attribute,
                                                                   " is not an aclCannAttr"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    *value = Contains(transport->Features(0).cann_attributes, attribute) ? 1 : 0;
    return absl::OkStatus();
  });
}

aclError aclrtGetDeviceCapability(int32_t deviceId, aclrtDevFeatureType devFeatureType,
                                  int32_t* value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetDeviceCapability";
    if (value == nullptr) return NullArgument(kApi, "value");
    const int feature = acl_client::RawEnum(devFeatureType);
    if (feature != ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV &&
        feature != ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": ", feature, " is not an aclrtDevFeatureType"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    *value = Contains(transport->Features(deviceId).capabilities, feature)
                 ? ACL_DEV_FEATURE_SUPPORT
                 : ACL_DEV_FEATURE_NOT_SUPPORT;
    return absl::OkStatus();
  });
}

aclError aclrtCheckArchCompatibility(const char* socVersion, int32_t* canCompatible) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtCheckArchCompatibility";
    if (socVersion == nullptr) return NullArgument(kApi, "socVersion");
    if (canCompatible == nullptr) return NullArgument(kApi, "canCompatible");
    // A SoC name longer than any is no SoC's; reading stops there.
    constexpr size_t kMaxSocName = 128;
    const std::string soc(socVersion, strnlen(socVersion, kMaxSocName + 1));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    *canCompatible = soc == transport->SocName() ? 1 : 0;
    return absl::OkStatus();
  });
}

}  // extern "C"
