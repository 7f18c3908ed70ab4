#include "hal/sim/sim_device.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "hal/sim/sim_kernels.h"

namespace hal::sim {
namespace {

constexpr uint64_t kAlignment = 512;  // as CANN aligns device allocations
constexpr uint64_t kOffsetLimit = uint64_t{1} << kDeviceIdShift;

}  // namespace

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
      return absl::ResourceExhaustedError(absl::StrCat("device ", info_.id, " has ",
                                                       info_.memory_bytes - used_, " bytes free, ",
                                                       size, " requested"));
    }
    if (next_offset_ + *rounded > kOffsetLimit) {
      return absl::ResourceExhaustedError("device address space exhausted");
    }
    offset = next_offset_;
    next_offset_ += *rounded;
    used_ += *rounded;
  }
  // calloc: the previous owner's bytes never show through. Large blocks come
  // fresh (already zero) from mmap and stay uncommitted until touched, so the
  // device's memory is committed lazily, as --sim_device_memory promises.
  void* bytes = std::calloc(1, *rounded);
  if (bytes == nullptr) {
    absl::MutexLock lock(&mu_);
    used_ -= *rounded;
    return absl::ResourceExhaustedError("the daemon host is out of memory");
  }
  DeviceBuffer buffer;
  buffer.address = kDeviceAddressBit | (uint64_t(info_.id) << kDeviceIdShift) | offset;
  buffer.size = size;
  buffer.reserved = *rounded;
  buffer.host = static_cast<uint8_t*>(bytes);
  buffer.storage = std::shared_ptr<void>(bytes, std::free);
  return buffer;
}

void SimDevice::Free(const DeviceBuffer& buffer) {
  absl::MutexLock lock(&mu_);
  used_ -= buffer.reserved;
}

uint64_t SimDevice::used_bytes() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

int64_t SimDevice::NowNanos() const {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

const Kernel* SimDevice::FindKernel(const std::string& name) const {
  const auto& kernels = BuiltinKernels();
  auto it = kernels.find(name);
  return it == kernels.end() ? nullptr : it->second.get();
}

std::vector<const Kernel*> SimDevice::Kernels() const {
  std::vector<const Kernel*> kernels;
  for (const auto& [name, kernel] : BuiltinKernels()) kernels.push_back(kernel.get());
  return kernels;
}

}  // namespace hal::sim
