#include "hal/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/acl/acl_backend.h"
#include "hal/sim/sim_backend.h"

namespace hal {
namespace {

struct Entry {
  const char* name;
  absl::StatusOr<std::unique_ptr<Backend>> (*create)(const BackendOptions& options);
};

absl::StatusOr<std::unique_ptr<Backend>> CreateSim(const BackendOptions& options) {
  sim::SimOptions sim{options.sim_device_count, options.sim_device_memory_bytes};
  sim.device_objects = {options.sim_device_streams, options.sim_device_events};
  return sim::CreateSimBackend(sim);
}

// Every backend this build knows, by name.
constexpr Entry kBackends[] = {
    {"sim", CreateSim},
    {"acl", acl::CreateAclBackend},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name,
                                                       const BackendOptions& options) {
  for (const Entry& entry : kBackends) {
    if (name == entry.name) return entry.create(options);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", name, "'; known: ",
                                                 absl::StrJoin(BackendNames(), ", ")));
}

std::vector<std::string> BackendNames() {
  std::vector<std::string> names;
  for (const Entry& entry : kBackends) names.push_back(entry.name);
  return names;
}

}  // namespace hal
