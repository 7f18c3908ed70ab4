#include "hal/sim/sim_kernels.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace hal::sim {
namespace {

constexpr char kTrapPayload[] = "acld/sim-trap";

class SimKernel : public Kernel {
 public:
  SimKernel(std::string name, size_t arg_count) : name_(std::move(name)), arg_count_(arg_count) {}
  const std::string& name() const override { return name_; }
  size_t arg_count() const override { return arg_count_; }
  uint64_t BusyMicros(const std::vector<uint64_t>&) const override { return 0; }

 private:
  const std::string name_;
  const size_t arg_count_;
};

// `count` uint32 from `address`, or an error when the byte count overflows.
absl::StatusOr<std::vector<DeviceRange>> Words(uint64_t address, uint64_t count) {
  if (count > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("a range of ", count, " words is too large"));
  }
  return std::vector<DeviceRange>{{address, count * 4}};
}

// Adds one to `block_dim` consecutive uint32 starting at args[0].
absl::Status AddOneToEachBlock(uint32_t block_dim, uint64_t address, MemoryResolver& memory) {
  absl::StatusOr<uint8_t*> bytes = memory.Resolve(address, uint64_t{block_dim} * 4);
  if (!bytes.ok()) return bytes.status();
  for (uint32_t b = 0; b < block_dim; ++b) {
    uint32_t value;
    std::memcpy(&value, *bytes + 4ull * b, 4);
    ++value;
    std::memcpy(*bytes + 4ull * b, &value, 4);
  }
  return absl::OkStatus();
}

class AddOne : public SimKernel {
 public:
  AddOne() : SimKernel("add_one_u32", 1) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, const std::vector<uint64_t>& args) const override {
    return Words(args[0], block_dim);
  }
  absl::Status Run(uint32_t block_dim, const std::vector<uint64_t>& args,
                   MemoryResolver& memory) const override {
    return AddOneToEachBlock(block_dim, args[0], memory);
  }
};

class SpinAddOne : public SimKernel {
 public:
  SpinAddOne() : SimKernel("spin_add_one_u32", 2) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, const std::vector<uint64_t>& args) const override {
    return Words(args[0], block_dim);
  }
  uint64_t BusyMicros(const std::vector<uint64_t>& args) const override { return args[1]; }
  absl::Status Run(uint32_t block_dim, const std::vector<uint64_t>& args,
                   MemoryResolver& memory) const override {
    return AddOneToEachBlock(block_dim, args[0], memory);
  }
};

class Fill : public SimKernel {
 public:
  Fill() : SimKernel("fill_u32", 3) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t, const std::vector<uint64_t>& args) const override {
    return Words(args[0], args[2]);
  }
  absl::Status Run(uint32_t, const std::vector<uint64_t>& args,
                   MemoryResolver& memory) const override {
    const uint64_t count = args[2];
    if (count > (uint64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat("fill_u32: count ", count, " is too large"));
    }
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0], count * 4);
    if (!bytes.ok()) return bytes.status();
    const uint32_t value = static_cast<uint32_t>(args[1]);
    for (uint64_t i = 0; i < count; ++i) std::memcpy(*bytes + 4 * i, &value, 4);
    return absl::OkStatus();
  }
};

class WriteI32 : public SimKernel {
 public:
  WriteI32() : SimKernel("write_i32", 2) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t, const std::vector<uint64_t>& args) const override {
    return Words(args[0], 1);
  }
  absl::Status Run(uint32_t, const std::vector<uint64_t>& args,
                   MemoryResolver& memory) const override {
    absl::StatusOr<uint8_t*> bytes = memory.Resolve(args[0], 4);
    if (!bytes.ok()) return bytes.status();
    const int32_t value = static_cast<int32_t>(args[1]);
    std::memcpy(*bytes, &value, 4);
    return absl::OkStatus();
  }
};

class Trap : public SimKernel {
 public:
  Trap() : SimKernel("trap", 0) {}
  absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t,
                                                   const std::vector<uint64_t>&) const override {
    return std::vector<DeviceRange>{};
  }
  absl::Status Run(uint32_t, const std::vector<uint64_t>&, MemoryResolver&) const override {
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
                                     std::make_unique<Fill>(), std::make_unique<WriteI32>(),
                                     std::make_unique<Trap>()};
    for (auto& kernel : all) {
      const std::string name = kernel->name();
      (*map)[name] = std::move(kernel);
    }
    return map;
  }();
  return *kernels;
}

}  // namespace hal::sim
