#include "hal/sim/sim_device.h"

#include <cstring>

#include "gtest/gtest.h"
#include "hal/sim/sim_kernels.h"
#include "hal/sim/sim_memory.h"

namespace hal::sim {
namespace {

// Resolves addresses inside one buffer only.
class OneBuffer : public MemoryResolver {
 public:
  explicit OneBuffer(const DeviceBuffer& buffer) : buffer_(buffer) {}
  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    if (address < buffer_.address || address - buffer_.address + bytes > buffer_.size) {
      return absl::OutOfRangeError("outside");
    }
    return SimBytes(DeviceSpan{buffer_, address - buffer_.address});
  }

 private:
  DeviceBuffer buffer_;
};

const Kernel* Kernel(const std::string& name) { return BuiltinKernels().at(name).get(); }

TEST(SimDeviceTest, AllocatesWithinCapacityAndNeverReusesAddresses) {
  SimDevice device(1, 4096);
  absl::StatusOr<DeviceBuffer> a = device.Allocate(1000);
  ASSERT_TRUE(a.ok());
  EXPECT_NE(a->address & kAddressBit, 0u);
  EXPECT_TRUE(device.info().addresses.Contains(a->address));
  EXPECT_EQ((a->address >> kDeviceIdShift) & 0xff, 1u);
  EXPECT_EQ(device.used_bytes(), 1024u);
  EXPECT_FALSE(device.Allocate(4096).ok());
  EXPECT_FALSE(device.Allocate(0).ok());
  device.Free(*a);
  EXPECT_EQ(device.used_bytes(), 0u);
  absl::StatusOr<DeviceBuffer> b = device.Allocate(1000);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(b->address, a->address);
}

TEST(SimDeviceTest, KernelsDoWhatTheSpecSays) {
  SimDevice device(0, 1 << 20);
  DeviceBuffer buffer = *device.Allocate(64);
  uint8_t* bytes = SimBytes(DeviceSpan{buffer, 0});
  OneBuffer memory(buffer);
  ASSERT_TRUE(Kernel("add_one_u32")->Run(4, {buffer.address}, memory).ok());
  ASSERT_TRUE(Kernel("add_one_u32")->Run(2, {buffer.address}, memory).ok());
  uint32_t values[4];
  std::memcpy(values, bytes, sizeof(values));
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], 2u);
  EXPECT_EQ(values[2], 1u);
  EXPECT_EQ(values[3], 1u);

  ASSERT_TRUE(Kernel("fill_u32")->Run(1, {buffer.address, 7, 16}, memory).ok());
  std::memcpy(values, bytes + 48, sizeof(values));
  EXPECT_EQ(values[3], 7u);
  EXPECT_FALSE(Kernel("fill_u32")->Run(1, {buffer.address, 7, 17}, memory).ok());

  ASSERT_TRUE(
      Kernel("write_i32")->Run(1, {buffer.address + 8, uint64_t(-5)}, memory).ok());
  int32_t written;
  std::memcpy(&written, bytes + 8, 4);
  EXPECT_EQ(written, -5);

  EXPECT_EQ(Kernel("spin_add_one_u32")->BusyMicros({buffer.address, 250}), 250u);
  EXPECT_TRUE(IsTrap(Kernel("trap")->Run(1, {}, memory)));
  EXPECT_FALSE(Kernel("add_one_u32")->Run(17, {buffer.address}, memory).ok());
  EXPECT_EQ(BuiltinKernels().count("no_such_kernel"), 0u);
  EXPECT_EQ(Kernel("fill_u32")->arg_count(), 3u);
  EXPECT_EQ(Kernel("trap")->arg_count(), 0u);
}

TEST(SimDeviceTest, ClockMovesForward) {
  SimDevice device(0, 1);
  const int64_t first = device.NowNanos();
  EXPECT_GE(device.NowNanos(), first);
}

}  // namespace
}  // namespace hal::sim
