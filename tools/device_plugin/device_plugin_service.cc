#include "tools/device_plugin/device_plugin_service.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "proto/acl/grpc_status.h"
#include "spdlog/spdlog.h"
#include "tools/device_plugin/preferred_allocation.h"

namespace acld::device_plugin {
namespace {

// How often a ListAndWatch stream looks at its cancellation and Stop() while
// no device changes.
constexpr absl::Duration kStreamStep = absl::Milliseconds(200);

}  // namespace

DevicePluginService::DevicePluginService(ResourceSpec resource, const DeviceSelection& selection,
                                         StatusPoller& poller, GroupAllocator& allocator)
    : resource_(std::move(resource)),
      selection_(selection),
      poller_(poller),
      allocator_(allocator) {}

v1beta1::DevicePluginOptions DevicePluginService::Options() {
  v1beta1::DevicePluginOptions options;
  options.set_pre_start_required(false);
  options.set_get_preferred_allocation_available(true);
  return options;
}

std::vector<AdvertisedUnit> DevicePluginService::Units(const DeviceSnapshot& snapshot) const {
  return AdvertisedUnits(selection_, resource_.kind, snapshot);
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* reply) {
  *reply = Options();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  std::optional<std::vector<AdvertisedUnit>> sent;
  uint64_t version = 0;
  StatusPoller::Versioned current = poller_.Current();
  while (!context->IsCancelled() && !stopping_) {
    std::vector<AdvertisedUnit> units = Units(current.snapshot);
    if (!sent.has_value() || units != *sent) {
      v1beta1::ListAndWatchResponse response;
      size_t healthy = 0;
      for (const AdvertisedUnit& unit : units) {
        v1beta1::Device* device = response.add_devices();
        device->set_id(FormatUnitId(unit.unit));
        device->set_health(unit.healthy ? kHealthy : kUnhealthy);
        healthy += unit.healthy ? 1 : 0;
      }
      if (!writer->Write(response)) break;
      spdlog::info("{}: ListAndWatch sent {} devices, {} healthy", resource_.name, units.size(),
                   healthy);
      sent = std::move(units);
    }
    version = current.version;
    current = poller_.WaitForChange(version, kStreamStep);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* reply) {
  if (request->container_requests_size() > kMaxContainersPerRequest) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat(request->container_requests_size(),
                                     " container requests (at most ", kMaxContainersPerRequest,
                                     ")"));
  }
  for (const v1beta1::ContainerPreferredAllocationRequest& container :
       request->container_requests()) {
    absl::StatusOr<std::vector<std::string>> chosen = PreferredAllocation(
        resource_.kind,
        std::vector<std::string>(container.available_deviceids().begin(),
                                 container.available_deviceids().end()),
        std::vector<std::string>(container.must_include_deviceids().begin(),
                                 container.must_include_deviceids().end()),
        container.allocation_size());
    if (!chosen.ok()) return ToGrpcStatus(chosen.status());
    v1beta1::ContainerPreferredAllocationResponse* response = reply->add_container_responses();
    for (std::string& id : *chosen) response->add_deviceids(std::move(id));
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* reply) {
  // The kubelet allocates what ListAndWatch advertised; when an ID is not
  // among the units known now (acld's answer is older than the kubelet's
  // view), acld is asked once more before the ID is refused.
  std::vector<AdvertisedUnit> units = Units(poller_.Current().snapshot);
  std::set<std::string> known;
  for (const AdvertisedUnit& unit : units) known.insert(FormatUnitId(unit.unit));
  bool all_known = true;
  for (const v1beta1::ContainerAllocateRequest& container : request->container_requests()) {
    for (const std::string& id : container.devices_ids()) all_known = all_known && known.count(id);
  }
  if (!all_known) units = Units(poller_.Refresh().snapshot);
  absl::StatusOr<v1beta1::AllocateResponse> response = allocator_.Allocate(*request, units);
  if (!response.ok()) {
    spdlog::warn("{}: Allocate refused: {}", resource_.name, response.status().ToString());
    return ToGrpcStatus(response.status());
  }
  *reply = *std::move(response);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  // Registered with pre_start_required = false; a kubelet that calls anyway
  // has nothing to wait for: the group is ready once Allocate returns.
  return grpc::Status::OK;
}

}  // namespace acld::device_plugin
