#include "hal/sim/sim_executable.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "hal/sim/sim_binary.h"
#include "hal/sim/sim_kernels.h"
#include "hal/sim/sim_status.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {

absl::StatusOr<SimFunction::ArgumentFields> SimFunction::Fields(absl::string_view args) const {
  const uint64_t expected = kernel_.arg_count() * 8;
  if (args.size() != expected) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("kernel ", name_, " takes ", expected,
                                        " bytes of arguments, got ", args.size()));
  }
  ArgumentFields fields(kernel_.arg_count());
  if (!fields.empty()) std::memcpy(fields.data(), args.data(), args.size());
  return fields;
}

absl::StatusOr<std::vector<DeviceRange>> SimFunction::Ranges(uint32_t block_dim,
                                                             absl::string_view args) const {
  absl::StatusOr<ArgumentFields> fields = Fields(args);
  if (!fields.ok()) return fields.status();
  absl::StatusOr<std::vector<DeviceRange>> ranges = kernel_.Ranges(block_dim, *fields);
  if (!ranges.ok()) return KernelStatus(name_, ranges.status());
  return ranges;
}

absl::StatusOr<std::shared_ptr<SimExecutable>> SimExecutable::Create(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  auto executable = std::shared_ptr<SimExecutable>(new SimExecutable);
  const auto& kernels = BuiltinKernels();
  for (const auto& [function, kernel_name] : entries) {
    auto kernel = kernels.find(kernel_name);
    if (kernel == kernels.end()) {
      return acld::AclStatus(
          ACL_ERROR_INVALID_PARAM,
          absl::StrCat("the sim has no kernel named '", absl::CHexEscape(kernel_name),
                       "' (docs/sim-binary.md lists them)"));
    }
    executable->functions_[function] = std::make_unique<SimFunction>(function, *kernel->second);
  }
  return executable;
}

absl::StatusOr<const Function*> SimExecutable::GetFunction(absl::string_view name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("the binary has no function named '",
                                        absl::CHexEscape(name.substr(0, 128)), "'"));
  }
  return it->second.get();
}

std::vector<const Function*> SimExecutable::Functions() const {
  std::vector<const Function*> functions;
  for (const auto& [name, function] : functions_) functions.push_back(function.get());
  return functions;
}

const SimExecutable& BuiltinExecutable() {
  static const std::shared_ptr<SimExecutable>* builtin = [] {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& [name, kernel] : BuiltinKernels()) entries.emplace_back(name, name);
    // Lives as long as the process: devices hand out its functions.
    return new std::shared_ptr<SimExecutable>(*SimExecutable::Create(entries));
  }();
  return **builtin;
}

absl::StatusOr<std::shared_ptr<Executable>> LoadSimBinary(absl::string_view binary) {
  absl::StatusOr<std::vector<SimBinaryEntry>> entries = ParseSimBinary(binary);
  if (!entries.ok()) return BadBinary(entries.status());
  std::vector<std::pair<std::string, std::string>> table;
  for (const SimBinaryEntry& entry : *entries) table.emplace_back(entry.function, entry.kernel);
  absl::StatusOr<std::shared_ptr<SimExecutable>> executable = SimExecutable::Create(table);
  if (!executable.ok()) return executable.status();
  return std::shared_ptr<Executable>(*std::move(executable));
}

}  // namespace hal::sim
