// Sim executables: a table from function names to sim kernels. The built-in
// kernels form one (aclsimLaunchKernel); a sim binary (docs/sim-binary.md)
// loads another, naming built-in kernels under the names a program asks for.
// Nothing a client sends is ever executed: a binary only names kernels.
#ifndef ACLD_HAL_SIM_SIM_EXECUTABLE_H_
#define ACLD_HAL_SIM_SIM_EXECUTABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/executable.h"
#include "hal/sim/sim_kernel.h"

namespace hal::sim {

class SimFunction : public Function {
 public:
  SimFunction(std::string name, const Kernel& kernel) : name_(std::move(name)), kernel_(kernel) {}

  const std::string& name() const override { return name_; }
  std::optional<uint64_t> args_size() const override { return kernel_.arg_count() * 8; }
  absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t block_dim,
                                                  absl::string_view args) const override;

  // The argument block as the kernel's 64-bit fields (inline: parsed on
  // every launch); an error when its size is not what the kernel takes.
  using ArgumentFields = absl::InlinedVector<uint64_t, 8>;
  absl::StatusOr<ArgumentFields> Fields(absl::string_view args) const;
  const Kernel& kernel() const { return kernel_; }

 private:
  const std::string name_;
  const Kernel& kernel_;
};

class SimExecutable : public Executable {
 public:
  // `entries`: function name -> built-in kernel name; each must exist.
  static absl::StatusOr<std::shared_ptr<SimExecutable>> Create(
      const std::vector<std::pair<std::string, std::string>>& entries);

  absl::StatusOr<const Function*> GetFunction(absl::string_view name) const override;
  std::vector<const Function*> Functions() const override;

 private:
  std::map<std::string, std::unique_ptr<SimFunction>, std::less<>> functions_;
};

// Every built-in kernel under its own name.
const SimExecutable& BuiltinExecutable();

// Loads a sim binary (hostile bytes): ACL_ERROR_INVALID_PARAM when malformed
// or when it names a kernel the sim does not have.
absl::StatusOr<std::shared_ptr<Executable>> LoadSimBinary(absl::string_view binary);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_EXECUTABLE_H_
