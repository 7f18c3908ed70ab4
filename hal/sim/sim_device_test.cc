#include "hal/sim/sim_device.h"

#include <cstring>
#include <map>

#include "gtest/gtest.h"
#include "hal/sim/sim_kernels.h"

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
    return buffer_.host + (address - buffer_.address);
  }

 private:
  DeviceBuffer buffer_;
};

TEST(SimDeviceTest, AllocatesWithinCapacityAndNeverReusesAddresses) {
  SimDevice device({1, "sim", 4096});
  absl::StatusOr<DeviceBuffer> a = device.Allocate(1000);
  ASSERT_TRUE(a.ok());
  EXPECT_NE(a->address & kDeviceAddressBit, 0u);
  EXPECT_EQ((a->address >> kDeviceIdShift) & 0xff, 1u);
  EXPECT_EQ(device.used_bytes(), 1024u);
  EXPECT_EQ(device.Allocate(4096).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(device.Allocate(0).ok());
  device.Free(*a);
  EXPECT_EQ(device.used_bytes(), 0u);
  absl::StatusOr<DeviceBuffer> b = device.Allocate(1000);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(b->address, a->address);
}

TEST(SimDeviceTest, KernelsDoWhatTheSpecSays) {
  SimDevice device({0, "sim", 1 << 20});
  DeviceBuffer buffer = *device.Allocate(64);
  std::memset(buffer.host, 0, 64);
  OneBuffer memory(buffer);
  ASSERT_TRUE(device.FindKernel("add_one_u32")->Run(4, {buffer.address}, memory).ok());
  ASSERT_TRUE(device.FindKernel("add_one_u32")->Run(2, {buffer.address}, memory).ok());
  uint32_t values[4];
  std::memcpy(values, buffer.host, sizeof(values));
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], 2u);
  EXPECT_EQ(values[2], 1u);
  EXPECT_EQ(values[3], 1u);

  ASSERT_TRUE(device.FindKernel("fill_u32")->Run(1, {buffer.address, 7, 16}, memory).ok());
  std::memcpy(values, buffer.host + 48, sizeof(values));
  EXPECT_EQ(values[3], 7u);
  EXPECT_FALSE(device.FindKernel("fill_u32")->Run(1, {buffer.address, 7, 17}, memory).ok());

  ASSERT_TRUE(
      device.FindKernel("write_i32")->Run(1, {buffer.address + 8, uint64_t(-5)}, memory).ok());
  int32_t written;
  std::memcpy(&written, buffer.host + 8, 4);
  EXPECT_EQ(written, -5);

  EXPECT_EQ(device.FindKernel("spin_add_one_u32")->BusyMicros({buffer.address, 250}), 250u);
  EXPECT_TRUE(IsTrap(device.FindKernel("trap")->Run(1, {}, memory)));
  EXPECT_FALSE(device.FindKernel("add_one_u32")->Run(17, {buffer.address}, memory).ok());
  EXPECT_EQ(device.FindKernel("no_such_kernel"), nullptr);
  EXPECT_EQ(device.FindKernel("fill_u32")->arg_count(), 3u);
  EXPECT_EQ(device.FindKernel("trap")->arg_count(), 0u);
}

TEST(SimDeviceTest, ClockMovesForward) {
  SimDevice device({0, "sim", 1});
  const int64_t first = device.NowNanos();
  EXPECT_GE(device.NowNanos(), first);
}

}  // namespace
}  // namespace hal::sim
