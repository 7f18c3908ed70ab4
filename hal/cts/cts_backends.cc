#include "hal/cts/cts_backends.h"

#include <cstdlib>

#include "hal/registry.h"
#include "hal/sim/sim_binary.h"

namespace hal::cts {
namespace {

std::string SimKernelsBinary() {
  return sim::EncodeSimBinary({{"inc", "add_one_u32"}, {"boom", "trap"}});
}

}  // namespace

std::vector<CtsBackend> CtsBackends() {
  std::vector<CtsBackend> backends;
  backends.push_back(CtsBackend{
      "sim",
      [] { return CreateBackend("sim", BackendOptions{}); },
      {},
      SimKernelsBinary()});
  // The acl backend over the stand-in vendor runtime (acld's own C API on the
  // sim, ACLD_CTS_STANDIN): every call, error path and completion of the
  // pass-through runs here; what only a real NPU proves is in
  // docs/architecture.md. The stand-in loads sim binaries.
  const char* standin = std::getenv("ACLD_CTS_STANDIN");
  if (standin != nullptr && *standin != '\0') {
    const std::string library = standin;
    backends.push_back(CtsBackend{
        "acl",
        [library] {
          BackendOptions options;
          options.vendor_library = library;
          return CreateBackend("acl", options);
        },
        // A real device's kernel arguments are opaque: the core cannot see
        // what they touch. (The stand-in exports acld's aclsim kernels, which
        // pass through; a real CANN runtime has none, and its device then
        // reports no built-in kernels.)
        {Feature::kKernelRanges},
        SimKernelsBinary()});
  }
  return backends;
}

}  // namespace hal::cts
