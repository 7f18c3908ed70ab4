#include "hal/acl/acl_backend.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hal/acl/acl_device.h"
#include "hal/acl/device_context.h"
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

// The notifies CANN states for the SoC's product: Atlas A2 (Ascend910B*) and
// A3 (Ascend910_93*) 8192, Ascend 950 65535, Atlas 200I/500 A2 (Ascend310B*)
// 2048; Atlas training (Ascend910A and the like) and inference (Ascend310P*)
// cards, and any SoC not named here, 1024, the fewest.
uint32_t NotifiesOf(absl::string_view soc) {
  if (absl::StartsWith(soc, "Ascend910B") || absl::StartsWith(soc, "Ascend910_93")) return 8192;
  if (absl::StartsWith(soc, "Ascend950")) return 65535;
  if (absl::StartsWith(soc, "Ascend310B")) return 2048;
  return 1024;
}

// How many streams and events the device has left for acld's clients, asked
// while acld is its only process (the probe's default stream aside), less
// the two streams BringUp makes: its context's default stream and the report
// thread's control stream. When the vendor cannot
// tell (an older CANN, or an answer of 0, which cannot be right before acld
// made anything), the fewest CANN documents for any product: 512 streams (an
// Atlas 200I/500 A2) and 1023 events (an Atlas inference card). Notifies
// have no query: CANN states them per product, told apart by SoC name.
DeviceObjectLimits ProbeObjectLimits(const VendorApi& api, absl::string_view soc) {
  constexpr uint32_t kFewestStreams = 512;
  constexpr uint32_t kFewestEvents = 1023;
  constexpr uint32_t kOwnStreams = 2;  // device_context.h's, report_thread.h's
  auto ask = [](aclError (*query)(uint32_t*), uint32_t fallback) {
    uint32_t count = 0;
    if (query == nullptr || query(&count) != ACL_SUCCESS || count == 0) return fallback;
    return count;
  };
  const uint32_t streams = ask(api.aclrtGetStreamAvailableNum, kFewestStreams);
  return {streams > kOwnStreams ? streams - kOwnStreams : 1,
          ask(api.aclrtGetEventAvailNum, kFewestEvents), NotifiesOf(soc)};
}

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
