#include "hal/acl/acl_backend.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hal/acl/acl_device.h"
#include "hal/acl/device_context.h"
#include "hal/acl/device_numbers.h"
#include "hal/acl/exception_router.h"
#include "hal/acl/host_registry.h"
#include "hal/acl/vendor_api.h"
#include "hal/acl/vendor_status.h"
#include "proto/acl/status_macros.h"
#include "hal/backend_options.h"

namespace hal::acl {
namespace {

class AclBackend final : public Backend {
 public:
  AclBackend(std::shared_ptr<const VendorApi> api, std::shared_ptr<ExceptionRouter> router,
             std::vector<DeviceInfo> infos)
      : api_(std::move(api)), router_(std::move(router)) {
    auto host_registry = std::make_shared<HostRegistry>();
    for (DeviceInfo& info : infos) {
      devices_.push_back(
          std::make_unique<AclDevice>(api_, std::move(info), router_, host_registry));
    }
  }

  ~AclBackend() override {
    devices_.clear();  // releases them: contexts, then the devices
    router_.reset();   // no exception callback after this
    api_->aclFinalize();
  }

  std::string name() const override { return "acl"; }
  // The vendor runtime still answers, and still sees every device acld drives.
  absl::Status Health() const override {
    uint32_t count = 0;
    ACL_RETURN_IF_ERROR(CheckVendor(api_->aclrtGetDeviceCount(&count), "aclrtGetDeviceCount"));
    if (count < devices_.size()) {
      return absl::UnavailableError(absl::StrCat("the vendor runtime sees ", count,
                                                 " devices, acld drives ", devices_.size()));
    }
    return absl::OkStatus();
  }
  int32_t device_count() const override { return static_cast<int32_t>(devices_.size()); }
  Device& device(int32_t id) override { return *devices_.at(id); }

  // Registered through a device that is up (the vendor needs a context);
  // the registration holds for every device (host_registry.h).
  std::shared_ptr<void> RegisterHostMemory(void* data, uint64_t bytes) override {
    for (const std::unique_ptr<AclDevice>& device : devices_) {
      if (!device->is_up() || !device->RegisterHostMemory(data, bytes).ok()) continue;
      AclDevice* registered = device.get();
      return std::shared_ptr<void>(data, [registered](void* memory) {
        registered->UnregisterHostMemory(memory).IgnoreError();  // a released device forgot it
      });
    }
    return nullptr;
  }

 private:
  std::shared_ptr<const VendorApi> api_;
  std::shared_ptr<ExceptionRouter> router_;
  std::vector<std::unique_ptr<AclDevice>> devices_;
};

// What DeviceInfo needs: the SoC name, the HBM size, the streams and events.
// The device is set for the query and reset after, so that it stays idle
// until BringUp.
absl::StatusOr<DeviceInfo> ProbeDevice(const VendorApi& api, int32_t id) {
  DeviceContext::ForgetThreadContext();
  absl::Status status = CheckVendor(api.aclrtSetDevice(id), "aclrtSetDevice");
  if (!status.ok()) return status;
  DeviceInfo info;
  info.id = id;
  const char* soc = api.aclrtGetSocName();
  info.name = soc != nullptr ? soc : "";
  size_t free = 0;
  size_t total = 0;
  status = CheckVendor(api.aclrtGetMemInfo(ACL_HBM_MEM, &free, &total), "aclrtGetMemInfo");
  info.memory_bytes = total;
  info.objects = ProbeObjectLimits(api, info.name);
  api.aclrtResetDevice(id);
  DeviceContext::ForgetThreadContext();
  if (!status.ok()) return status;
  return info;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateInitialized(std::shared_ptr<const VendorApi> api) {
  uint32_t count = 0;
  absl::Status status = CheckVendor(api->aclrtGetDeviceCount(&count), "aclrtGetDeviceCount");
  if (!status.ok()) return status;
  std::vector<DeviceInfo> infos;
  for (uint32_t id = 0; id < count; ++id) {
    absl::StatusOr<DeviceInfo> info = ProbeDevice(*api, static_cast<int32_t>(id));
    if (!info.ok()) return info.status();
    infos.push_back(*std::move(info));
  }
  absl::StatusOr<std::shared_ptr<ExceptionRouter>> router = ExceptionRouter::Install(api);
  if (!router.ok()) return router.status();
  return std::unique_ptr<Backend>(
      new AclBackend(std::move(api), *std::move(router), std::move(infos)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateAclBackend(const BackendOptions& options) {
  absl::StatusOr<std::shared_ptr<const VendorApi>> api =
      VendorApi::Load(options.vendor_library, options.deep_bind);
  if (!api.ok()) return api.status();
  // A vendor another backend (or anyone) initialized is refused: aclFinalize
  // at this backend's end would pull the runtime from under the other.
  absl::Status status = CheckVendor((*api)->aclInit(nullptr), "aclInit");
  if (!status.ok()) return status;
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateInitialized(*api);
  if (!backend.ok()) (*api)->aclFinalize();
  return backend;
}

}  // namespace hal::acl
