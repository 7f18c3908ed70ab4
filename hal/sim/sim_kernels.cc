#include "hal/sim/sim_kernels.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "hal/sim/sim_float_environment.h"
#include "hal/sim/sim_floats.h"
#include "hal/sim/sim_printf.h"

namespace hal::sim {
namespace {

constexpr char kTrapPayload[] = "acld/sim-trap";

class SimKernel : public Kernel {
 public:
  SimKernel(std::string name, size_t arg_count) : name_(std::move(name)), arg_count_(arg_count) {}
  const std::string& name() const override { return name_; }
  size_t arg_count() const override { return arg_count_; }
  uint64_t BusyMicros(absl::Span<const uint64_t>) const override { return 0; }

 private:
  const std::string name_;
  const size_t arg_count_;
};

// A kernel whose work splits into elements (Kernel::Elements), about
// `per_piece` of them a millisecond: Run is all of them.
class ElementwiseKernel : public SimKernel {
 public:
  ElementwiseKernel(std::string name, size_t arg_count, uint64_t per_piece)
      : SimKernel(std::move(name), arg_count), per_piece_(per_piece) {}
  uint64_t ElementsPerPiece() const override { return per_piece_; }
  absl::Status Run(uint32_t block_dim, absl::Span<const uint64_t> args,
                   MemoryResolver& memory) const final {
    return RunElements(block_dim, args, memory, 0, Elements(block_dim, args));
  }

 private:
  const uint64_t per_piece_;
};

// Words are cheap: a million of them is about a millisecond.
constexpr uint64_t kWordsPerPiece = uint64_t{1} << 20;

// `count` uint32 from `address`, or an error when the byte count overflows.
absl::StatusOr<std::vector<DeviceRange>> Words(uint64_t address, uint64_t count) {
  if (count > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("a range of ", count, " words is too large"));
  }
  return std::vector<DeviceRange>{{address, count * 4}};
}

// The first three arguments as `bytes`-long vectors (x, y, z), or an error
// when one would wrap around the address space.
absl::StatusOr<std::vector<DeviceRange>> ThreeVectors(const char* kernel,
                                                      absl::Span<const uint64_t> args,
                                                      uint64_t bytes) {
  std::vector<DeviceRange> ranges;
  for (int i = 0; i < 3; ++i) {
    if (args[i] > std::numeric_limits<uint64_t>::max() - bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(kernel, ": ", bytes, " bytes from address ", args[i], " wrap around"));
    }
    ranges.push_back({args[i], bytes});
  }
  return ranges;
}

// The bytes of ThreeVectors' ranges.
absl::StatusOr<std::array<uint8_t*, 3>> ResolveThree(const std::vector<DeviceRange>& ranges,
                                                     MemoryResolver& memory) {
  std::array<uint8_t*, 3> buffers;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(ranges[i].address, ranges[i].bytes);
    if (!bytes.ok()) return bytes.status();
    buffers[i] = *bytes;
  }
  return buffers;
}

// A kernel that applies `Op` to the uint32 at args[0] of each block (block
// b's is word b): its elements are its blocks.
template <typename Op>
class EachBlockWord : public ElementwiseKernel {
 public:
  EachBlockWord(std::string name, size_t arg_count)
      : ElementwiseKernel(std::move(name), arg_count, kWordsPerPiece) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, absl::Span<const uint64_t> args) const override {
    return Words(args[0], block_dim);
  }
  uint64_t Elements(uint32_t block_dim, absl::Span<const uint64_t>) const override {
    return block_dim;
  }
  absl::Status RunElements(uint32_t, absl::Span<const uint64_t> args, MemoryResolver& memory,
                           uint64_t first, uint64_t end) const override {
    if (first >= end) return absl::OkStatus();
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0] + 4 * first, 4 * (end - first));
    if (!bytes.ok()) return bytes.status();
    for (uint64_t b = 0; b < end - first; ++b) {
      uint32_t value;
      std::memcpy(&value, *bytes + 4 * b, 4);
      value = Op()(value);
      std::memcpy(*bytes + 4 * b, &value, 4);
    }
    return absl::OkStatus();
  }
};

struct PlusOne {
  uint32_t operator()(uint32_t value) const { return value + 1; }
};
struct Twice {
  uint32_t operator()(uint32_t value) const { return value * 2; }
};

class AddOne : public EachBlockWord<PlusOne> {
 public:
  AddOne() : EachBlockWord("add_one_u32", 1) {}
};

class SpinAddOne : public EachBlockWord<PlusOne> {
 public:
  SpinAddOne() : EachBlockWord("spin_add_one_u32", 2) {}
  uint64_t BusyMicros(absl::Span<const uint64_t> args) const override { return args[1]; }
};

class DoubleEach : public EachBlockWord<Twice> {
 public:
  DoubleEach() : EachBlockWord("double_u32", 1) {}
};

class Fill : public ElementwiseKernel {
 public:
  Fill() : ElementwiseKernel("fill_u32", 3, kWordsPerPiece) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t, absl::Span<const uint64_t> args) const override {
    return Words(args[0], args[2]);
  }
  uint64_t Elements(uint32_t, absl::Span<const uint64_t> args) const override { return args[2]; }
  absl::Status RunElements(uint32_t, absl::Span<const uint64_t> args, MemoryResolver& memory,
                           uint64_t first, uint64_t end) const override {
    if (args[2] > (uint64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat("fill_u32: count ", args[2], " is too large"));
    }
    if (first >= end) return absl::OkStatus();
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0] + 4 * first, 4 * (end - first));
    if (!bytes.ok()) return bytes.status();
    const uint32_t value = static_cast<uint32_t>(args[1]);
    for (uint64_t i = 0; i < end - first; ++i) std::memcpy(*bytes + 4 * i, &value, 4);
    return absl::OkStatus();
  }
};

class WriteI32 : public SimKernel {
 public:
  WriteI32() : SimKernel("write_i32", 2) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t, absl::Span<const uint64_t> args) const override {
    return Words(args[0], 1);
  }
  absl::Status Run(uint32_t, absl::Span<const uint64_t> args,
                   MemoryResolver& memory) const override {
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0], 4);
    if (!bytes.ok()) return bytes.status();
    const int32_t value = static_cast<int32_t>(args[1]);
    std::memcpy(*bytes, &value, 4);
    return absl::OkStatus();
  }
};

uint16_t AddHalves(uint16_t a, uint16_t b) {
  // Two halves sum exactly in a double (at most 41 significant bits), so one
  // rounding to half gives the correctly rounded half sum.
  return DoubleToHalf(HalfToDouble(a) + HalfToDouble(b));
}

// add_f16_2048: the 0_launch_kernel sample's add_custom(x, y, z). Block b adds
// the 2048 halves from element 2048*b of x and y into z; the per-block length
// is fixed, so block_dim blocks touch block_dim * 4096 bytes of each buffer.
// dst[i] = x[i] + alpha * y[i] for `count` floats; alpha travels as the
// bits of a float in the low half of its field. The whole vector is one
// task whatever the block count (blocks split it on a device; here they would
// only repeat the same writes).
class AxpyF32 : public ElementwiseKernel {
 public:
  static constexpr uint64_t kMaxCount = uint64_t{1} << 36;

  AxpyF32() : ElementwiseKernel("axpy_f32", 5, uint64_t{1} << 19) {}

  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t, absl::Span<const uint64_t> args) const override {
    const uint64_t count = args[4];
    if (count > kMaxCount) {
      return absl::InvalidArgumentError(absl::StrCat("axpy_f32: count ", count, " is too large"));
    }
    return ThreeVectors("axpy_f32", args, count * 4);
  }

  uint64_t Elements(uint32_t, absl::Span<const uint64_t> args) const override { return args[4]; }

  absl::Status RunElements(uint32_t block_dim, absl::Span<const uint64_t> args,
                           MemoryResolver& memory, uint64_t first, uint64_t end) const override {
    absl::StatusOr<std::vector<DeviceRange>> ranges = Ranges(block_dim, args);
    if (!ranges.ok()) return ranges.status();
    if (first >= end) return absl::OkStatus();
    absl::StatusOr<std::array<uint8_t*, 3>> resolved = ResolveThree(*ranges, memory);
    if (!resolved.ok()) return resolved.status();
    const std::array<uint8_t*, 3>& buffers = *resolved;
    float alpha;
    const uint32_t alpha_bits = static_cast<uint32_t>(args[3]);
    std::memcpy(&alpha, &alpha_bits, sizeof(alpha));
    // Element by element, both inputs read before the write: dst may be x or y.
    for (uint64_t e = first; e < end; ++e) {
      float x, y;
      std::memcpy(&x, buffers[0] + 4 * e, 4);
      std::memcpy(&y, buffers[1] + 4 * e, 4);
      const float z = FloatEnvironment::Float(x + alpha * y);
      std::memcpy(buffers[2] + 4 * e, &z, 4);
    }
    return absl::OkStatus();
  }
};

class AddF16 : public ElementwiseKernel {
 public:
  static constexpr uint64_t kElementsPerBlock = 2048;
  static constexpr uint64_t kBytesPerBlock = kElementsPerBlock * 2;

  AddF16() : ElementwiseKernel("add_f16_2048", 3, uint64_t{1} << 17) {}

  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, absl::Span<const uint64_t> args) const override {
    // block_dim < 2^32, so bytes < 2^44: only address + bytes can overflow.
    return ThreeVectors("add_f16_2048", args, uint64_t{block_dim} * kBytesPerBlock);
  }

  uint64_t Elements(uint32_t block_dim, absl::Span<const uint64_t>) const override {
    return uint64_t{block_dim} * kElementsPerBlock;
  }

  absl::Status RunElements(uint32_t block_dim, absl::Span<const uint64_t> args,
                           MemoryResolver& memory, uint64_t first, uint64_t end) const override {
    if (first >= end) return absl::OkStatus();
    absl::StatusOr<std::vector<DeviceRange>> ranges = Ranges(block_dim, args);
    if (!ranges.ok()) return ranges.status();
    absl::StatusOr<std::array<uint8_t*, 3>> resolved = ResolveThree(*ranges, memory);
    if (!resolved.ok()) return resolved.status();
    const std::array<uint8_t*, 3>& buffers = *resolved;
    // Element by element (halves are little-endian in device memory),
    // reading both inputs before writing, so z may be x or y (in place).
    for (uint64_t e = first; e < end; ++e) {
      const uint8_t* x = buffers[0] + 2 * e;
      const uint8_t* y = buffers[1] + 2 * e;
      const uint16_t z = FloatEnvironment::Half(AddHalves(
          static_cast<uint16_t>(x[0] | (x[1] << 8)), static_cast<uint16_t>(y[0] | (y[1] << 8))));
      buffers[2][2 * e] = static_cast<uint8_t>(z & 0xFF);
      buffers[2][2 * e + 1] = static_cast<uint8_t>(z >> 8);
    }
    return absl::OkStatus();
  }
};

// Device printf: each block prints the format (up to kFormatBytes, carried
// in the arguments themselves, NUL-padded) with its own int32 from
// values[block] (no values: the format as it stands); sim_printf.h says how.
class PrintI32 : public SimKernel {
 public:
  static constexpr size_t kFormatFields = 32;
  static constexpr size_t kFormatBytes = kFormatFields * 8;

  PrintI32() : SimKernel("printf_i32", 1 + kFormatFields) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, absl::Span<const uint64_t> args) const override {
    if (args[0] == 0) return std::vector<DeviceRange>{};
    return Words(args[0], block_dim);
  }
  absl::Status Run(uint32_t block_dim, absl::Span<const uint64_t> args,
                   MemoryResolver& memory) const override {
    std::string discarded;
    return RunAndPrint(block_dim, args, memory, discarded);
  }
  absl::Status RunAndPrint(uint32_t block_dim, absl::Span<const uint64_t> args,
                           MemoryResolver& memory, std::string& printed) const override {
    char format[kFormatBytes];
    for (size_t i = 0; i < kFormatFields; ++i) {
      for (size_t b = 0; b < 8; ++b) format[8 * i + b] = static_cast<char>(args[1 + i] >> (8 * b));
    }
    const absl::string_view text(format, strnlen(format, kFormatBytes));
    // A non-empty format prints at least a byte per block, so the loop below
    // ends within kMaxPrintedBytes blocks whatever block_dim is.
    if (text.empty()) return absl::OkStatus();
    const uint8_t* values = nullptr;
    if (args[0] != 0) {
      absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0], uint64_t{block_dim} * 4);
      if (!bytes.ok()) return bytes.status();
      values = *bytes;
    }
    for (uint32_t b = 0; b < block_dim && printed.size() < kMaxPrintedBytes; ++b) {
      std::optional<int32_t> value;
      if (values != nullptr) {
        int32_t word;
        std::memcpy(&word, values + 4ull * b, 4);
        value = word;
      }
      AppendDevicePrintf(text, value, kMaxPrintedBytes, printed);
    }
    return absl::OkStatus();
  }
};

class Trap : public SimKernel {
 public:
  Trap() : SimKernel("trap", 0) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t,
                                                   absl::Span<const uint64_t>) const override {
    return std::vector<DeviceRange>{};
  }
  absl::Status Run(uint32_t, absl::Span<const uint64_t>, MemoryResolver&) const override {
    return TrapStatus();
  }
};

}  // namespace

absl::Status TrapStatus() {
  absl::Status status = absl::AbortedError("the trap kernel raised an AI core exception");
  status.SetPayload(kTrapPayload, absl::Cord("1"));
  return status;
}

bool IsTrap(const absl::Status& status) { return status.GetPayload(kTrapPayload).has_value(); }

const std::map<std::string, std::unique_ptr<Kernel>>& BuiltinKernels() {
  static const auto* kernels = [] {
    auto* map = new std::map<std::string, std::unique_ptr<Kernel>>;
    std::unique_ptr<Kernel> all[] = {std::make_unique<AddOne>(), std::make_unique<SpinAddOne>(),
                                     std::make_unique<DoubleEach>(), std::make_unique<AxpyF32>(),
                                     std::make_unique<PrintI32>(),
                                     std::make_unique<Fill>(), std::make_unique<WriteI32>(),
                                     std::make_unique<Trap>(), std::make_unique<AddF16>()};
    for (auto& kernel : all) {
      const std::string name = kernel->name();
      (*map)[name] = std::move(kernel);
    }
    return map;
  }();
  return *kernels;
}

}  // namespace hal::sim
