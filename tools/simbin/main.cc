// simbin: writes or shows a sim binary (docs/sim-binary.md).
//
//   simbin OUT.bin FUNCTION=KERNEL [FUNCTION=KERNEL ...]
//       Writes a sim binary mapping each FUNCTION (the name a program passes
//       to aclrtBinaryGetFunction) to a built-in sim KERNEL.
//   simbin --dump FILE      prints a sim binary's entries as FUNCTION=KERNEL
//   simbin --kernels        lists the built-in sim kernels and their argument bytes
//
// Example, for the 0_launch_kernel sample (run from its directory):
//   simbin out/fatbin/ascendc_kernels_simple/ascendc_kernels_simple.o add_custom=add_f16_2048
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "hal/sim/sim_binary.h"
#include "hal/sim/sim_kernels.h"
#include "tools/simbin/simbin_lib.h"

namespace {

constexpr char kUsage[] =
    "usage: simbin OUT.bin FUNCTION=KERNEL [FUNCTION=KERNEL ...]\n"
    "       simbin --dump FILE\n"
    "       simbin --kernels\n"
    "Writes a sim binary naming built-in sim kernels (see docs/sim-binary.md).\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "simbin: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--kernels") {
    for (const auto& [name, kernel] : hal::sim::BuiltinKernels()) {
      std::printf("%s\t%zu\n", name.c_str(), kernel->arg_count() * 8);
    }
    return 0;
  }
  if (args[0] == "--dump") {
    if (args.size() != 2) return Fail("--dump takes one FILE");
    absl::StatusOr<std::string> bytes =
        acld::simbin::ReadFileBounded(args[1], hal::sim::kMaxSimBinaryBytes);
    if (!bytes.ok()) return Fail(std::string(bytes.status().message()));
    absl::StatusOr<std::vector<hal::sim::SimBinaryEntry>> entries =
        hal::sim::ParseSimBinary(*bytes);
    if (!entries.ok()) return Fail(args[1] + ": " + std::string(entries.status().message()));
    for (const auto& entry : *entries) {
      std::printf("%s=%s\n", entry.function.c_str(), entry.kernel.c_str());
    }
    return 0;
  }
  if (args[0].rfind("--", 0) == 0) return Fail("unknown option " + args[0] + "\n" + kUsage);
  if (args.size() < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  std::set<std::string> known;
  for (const auto& [name, kernel] : hal::sim::BuiltinKernels()) known.insert(name);
  absl::StatusOr<std::vector<hal::sim::SimBinaryEntry>> entries =
      acld::simbin::ParseMappings({args.begin() + 1, args.end()}, known);
  if (!entries.ok()) return Fail(std::string(entries.status().message()));
  const std::string bytes = hal::sim::EncodeSimBinary(*entries);
  absl::Status written = acld::simbin::WriteFileAtomically(args[0], bytes);
  if (!written.ok()) return Fail(std::string(written.message()));
  std::printf("wrote %s: %zu bytes, %zu function(s)\n", args[0].c_str(), bytes.size(),
              entries->size());
  return 0;
}
