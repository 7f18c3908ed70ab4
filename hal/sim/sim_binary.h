// The sim's own "kernel binary" format (docs/sim-binary.md).
//
// A real Ascend kernel binary is device code. The sim runs no device code: a
// sim binary only NAMES built-in sim kernels (sim_kernels.h). Each entry maps
// a function name — what a program passes to aclrtBinaryGetFunction, e.g. the
// "add_custom" of the 0_launch_kernel sample — to the name of a built-in
// kernel, e.g. "add_f16_2048". Nothing in a sim binary is ever executed.
//
// Layout (all integers little-endian, no padding, no trailing bytes):
//
//   offset  size  field
//   0       8     magic, the ASCII bytes "ACLDSIMB"
//   8       4     uint32 version, 1
//   12      4     uint32 entry count, 1..kMaxSimBinaryEntries
//   16      ...   entries, each:
//                   uint16 function name length, then the function name
//                   uint16 kernel name length,   then the kernel name
//
// Names are 1..kMaxSimBinaryNameBytes bytes of printable, non-space ASCII
// (0x21..0x7E). Function names are unique within a binary; several functions
// may name the same kernel. A whole binary is at most kMaxSimBinaryBytes.
//
// ParseSimBinary checks the format only; whether a kernel name is a built-in
// kernel of the device is checked where the binary is used (the tool simbin
// checks it against BuiltinKernels() before writing).
#ifndef ACLD_HAL_SIM_SIM_BINARY_H_
#define ACLD_HAL_SIM_SIM_BINARY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hal::sim {

inline constexpr char kSimBinaryMagic[] = "ACLDSIMB";  // 8 bytes, without the NUL
inline constexpr size_t kSimBinaryMagicBytes = 8;
inline constexpr uint32_t kSimBinaryVersion = 1;
inline constexpr size_t kMaxSimBinaryBytes = size_t{1} << 20;  // 1 MiB
inline constexpr uint32_t kMaxSimBinaryEntries = 1024;
inline constexpr size_t kMaxSimBinaryNameBytes = 256;

struct SimBinaryEntry {
  std::string function;  // what aclrtBinaryGetFunction asks for
  std::string kernel;    // a built-in sim kernel name

  bool operator==(const SimBinaryEntry& other) const {
    return function == other.function && kernel == other.kernel;
  }
};

// Decodes and validates a sim binary. InvalidArgument, with a message naming
// the byte offset and the rule broken, for anything but a well-formed binary.
absl::StatusOr<std::vector<SimBinaryEntry>> ParseSimBinary(absl::string_view bytes);

// Whether `entries` make a valid sim binary: 1..kMaxSimBinaryEntries entries,
// valid names, unique function names. The checks ParseSimBinary applies to
// what it decodes.
absl::Status ValidateSimBinaryEntries(const std::vector<SimBinaryEntry>& entries);

// Encodes `entries`. For entries that pass ValidateSimBinaryEntries,
// ParseSimBinary(EncodeSimBinary(entries)) == entries. For any others the
// result is a binary ParseSimBinary rejects (never one that decodes to
// something else): a name longer than 65535 bytes is cut to 65535, which is
// still too long.
std::string EncodeSimBinary(const std::vector<SimBinaryEntry>& entries);

// True when `bytes` start like an ELF file (a real device binary), so callers
// can say so instead of only "bad magic".
bool LooksLikeElf(absl::string_view bytes);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_BINARY_H_
