// The backends the conformance suite (cts_test.cc) runs against, each with
// what it does not support and why (cts_backends.cc).
#ifndef ACLD_HAL_CTS_CTS_BACKENDS_H_
#define ACLD_HAL_CTS_CTS_BACKENDS_H_

#include <functional>
#include <ostream>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "hal/backend.h"

namespace hal::cts {

enum class Feature {
  kBuiltinKernels,  // Device::builtin_kernels (the sim's aclsimLaunchKernel kernels)
  kKernelRanges,    // Function::Ranges and args_size: launches resolve through the core
};

struct CtsBackend {
  std::string name;
  std::function<absl::StatusOr<std::unique_ptr<Backend>>()> create;
  std::set<Feature> unsupported;
  // A binary this backend loads whose functions are "inc" (adds one to the
  // uint32 at its one pointer argument, per block) and "boom" (fails).
  std::string kernels_binary;
};

std::vector<CtsBackend> CtsBackends();

// For test names and failure messages.
inline void PrintTo(const CtsBackend& backend, std::ostream* out) { *out << backend.name; }

}  // namespace hal::cts

#endif  // ACLD_HAL_CTS_CTS_BACKENDS_H_
