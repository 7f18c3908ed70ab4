#include "hal/sim/sim_device.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "hal/sim/sim_backend.h"
#include "hal/sim/sim_binary.h"
#include "hal/sim/sim_event.h"
#include "hal/sim/sim_executable.h"
#include "hal/sim/sim_memory.h"
#include "hal/sim/sim_status.h"
#include "hal/sim/sim_stream.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {
namespace {

constexpr uint64_t kAlignment = 512;  // as CANN aligns device allocations
// Physical allocations and address reservations come in huge pages, as on
// the NPU the sim stands for.
constexpr uint64_t kAddressGranularity = uint64_t{2} << 20;
constexpr uint64_t kOffsetLimit = uint64_t{1} << kDeviceIdShift;
// No allocation starts at the window's own start (its address would be the
// device's base).
constexpr uint64_t kFirstOffset = 0x1000;

}  // namespace

SimDevice::SimDevice(int32_t id, uint64_t memory_bytes, Clock& clock,
                     std::shared_ptr<MemoryWatch> memory_watch, DeviceObjectLimits objects)
    : info_{id,
            kSimSocName,
            memory_bytes,
            AddressRange{kAddressBit | (uint64_t(id) << kDeviceIdShift),
                         (kAddressBit | (uint64_t(id) << kDeviceIdShift)) + kOffsetLimit},
            kMaxSimBinaryBytes,
            objects},
      // Named: it starts with the device's first wait, and ps (and the
      // adversarial suite's count of acld's threads) tell it apart.
      timer_(clock, "sim-device"),
      memory_watch_(std::move(memory_watch)),
      stream_slots_(objects.streams),
      event_slots_(objects.events),
      window_(kFirstOffset, kOffsetLimit) {}

DeviceFeatures SimDevice::features() const {
  DeviceFeatures features{{ACL_CANN_ATTR_INF_NAN}, {}, {}, {}, /*float_overflow=*/true};
  // The core counts of the SoC the sim reports (aclrtGetSocName).
  features.device_info = {{ACL_DEV_ATTR_AICPU_CORE_NUM, 6},
                          {ACL_DEV_ATTR_AICORE_CORE_NUM, kSimCubeCores},
                          {ACL_DEV_ATTR_CUBE_CORE_NUM, kSimCubeCores},
                          {ACL_DEV_ATTR_VECTOR_CORE_NUM, kSimVectorCores},
                          {ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, static_cast<int64_t>(info_.memory_bytes)}};
  features.address_granularity = kAddressGranularity;
  return features;
}

absl::Status SimDevice::BringUp() {
  up_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void SimDevice::Release() { up_.store(false, std::memory_order_release); }

std::optional<uint64_t> SimDevice::ReservedBytes(uint64_t size) const {
  // Checked before rounding: a size near 2^64 must not round to 0.
  if (size == 0 || size > std::min(info_.memory_bytes, kOffsetLimit)) return std::nullopt;
  return (size + kAlignment - 1) / kAlignment * kAlignment;
}

absl::StatusOr<DeviceBuffer> SimDevice::Allocate(uint64_t size) {
  const std::optional<uint64_t> rounded = ReservedBytes(size);
  uint64_t offset;
  {
    absl::MutexLock lock(&mu_);
    if (!rounded.has_value() || *rounded > info_.memory_bytes - used_) {
      return OutOfDeviceMemory(absl::StrCat("device ", info_.id, " has ",
                                                       info_.memory_bytes - used_, " bytes free, ",
                                                       size, " requested"));
    }
    const std::optional<uint64_t> taken = window_.Take(*rounded, kAlignment);
    if (!taken.has_value()) return OutOfDeviceMemory("device address space exhausted");
    offset = *taken;
    used_ += *rounded;
  }
  // calloc: the previous owner's bytes never show through. Large blocks come
  // fresh (already zero) from mmap and stay uncommitted until touched, so the
  // device's memory is committed lazily, as --sim_device_memory promises.
  void* bytes = std::calloc(1, *rounded);
  if (bytes == nullptr) {
    absl::MutexLock lock(&mu_);
    used_ -= *rounded;
    window_.Give(offset, *rounded);
    return OutOfDeviceMemory("the daemon host is out of memory");
  }
  DeviceBuffer buffer;
  buffer.address = info_.addresses.begin | offset;
  buffer.size = size;
  buffer.reserved = *rounded;
  buffer.storage = std::shared_ptr<void>(bytes, std::free);
  return buffer;
}

absl::StatusOr<uint64_t> SimDevice::ReserveAddresses(uint64_t size, uint64_t alignment) {
  if (size == 0 || size % kAddressGranularity != 0 || alignment < kAddressGranularity ||
      (alignment & (alignment - 1)) != 0 || size > kOffsetLimit || alignment > kOffsetLimit) {
    return InvalidArgument(absl::StrCat("an address reservation of ", size, " bytes aligned to ",
                                        alignment, " (sizes are multiples of ",
                                        kAddressGranularity, ", alignments powers of two)"));
  }
  absl::MutexLock lock(&mu_);
  const std::optional<uint64_t> start = window_.Take(size, alignment);
  if (!start.has_value()) return OutOfDeviceMemory("device address space exhausted");
  return info_.addresses.begin | *start;
}

void SimDevice::ReleaseAddresses(uint64_t address, uint64_t size) {
  absl::MutexLock lock(&mu_);
  window_.Give(address - info_.addresses.begin, size);
}

void SimDevice::Free(const DeviceBuffer& buffer) {
  absl::MutexLock lock(&mu_);
  used_ -= buffer.reserved;
  window_.Give(buffer.address - info_.addresses.begin, buffer.reserved);
}

uint64_t SimDevice::used_bytes() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

SimDevice::~SimDevice() { timer_.Stop(); }

int64_t SimDevice::NowNanos() const {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

DeviceUtilization SimDevice::Utilization() const {
  DeviceUtilization utilization;
  utilization.compute_percent = busy_meter_.Percent(BusyClockNanos());
  utilization.memory_percent = PercentOf(used_bytes(), info_.memory_bytes);
  return utilization;
}

absl::Status SimDevice::Copy(const Transfer& transfer) {
  if (transfer.count == 0) return absl::OkStatus();
  SimTransfer(transfer);
  if (transfer.device_dst.has_value()) {
    memory_watch_->Written(SimBytes(*transfer.device_dst), transfer.count);
  }
  return absl::OkStatus();
}

absl::Status SimDevice::Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) {
  if (count != 0) std::memset(SimBytes(dst), value, count);
  memory_watch_->Written(SimBytes(dst), count);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::CreateStream(StreamOptions options) {
  std::shared_ptr<void> slot = stream_slots_.Take();
  if (slot == nullptr) {
    // No device id: a quota group's process knows the device by another.
    return acld::AclStatus(ACL_ERROR_RT_NO_STREAM_RESOURCE,
                           absl::StrCat("the device has no stream left of its ",
                                        info_.objects.streams, " (--sim_device_streams)"));
  }
  return std::make_unique<SimStream>(*this, timer_, turns_, std::move(options), std::move(slot));
}

absl::StatusOr<std::shared_ptr<Event>> SimDevice::CreateEvent() {
  std::shared_ptr<void> slot = event_slots_.Take();
  if (slot == nullptr) {
    return acld::AclStatus(ACL_ERROR_RT_NO_EVENT_RESOURCE,
                           absl::StrCat("the device has no event left of its ",
                                        info_.objects.events, " (--sim_device_events)"));
  }
  return std::make_shared<SimEvent>(std::move(slot));
}

absl::StatusOr<std::shared_ptr<Executable>> SimDevice::LoadExecutable(absl::string_view binary) {
  return LoadSimBinary(binary);
}

const Executable* SimDevice::builtin_kernels() const { return &BuiltinExecutable(); }

}  // namespace hal::sim
