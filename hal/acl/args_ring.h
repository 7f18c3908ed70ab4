// Where a stream's kernel argument blocks live until their launches ran.
//
// aclrtLaunchKernel takes the argument block in device memory (CANN's
// argsData is a device pointer), while the HAL hands the backend the
// application's block in host memory. Each launch therefore
// copies its block into a slice of a device ring with aclrtMemcpyAsync on the
// launching stream (so the copy lands before the kernel reads it), from the
// same slice of a pinned host ring (aclrtMallocHost: with pageable memory CANN
// would make the copy synchronous, and wait for the whole stream). Slices are
// handed back in launch order when launches are reported, which is what makes
// a ring enough. A stream whose ring is full starts a larger one; the old one
// goes once its last slice is handed back.
//
// A ring's device memory is charged to its stream's owner
// (StreamOptions::charge_memory) for as long as the ring lives: a tenant's
// streams' rings count against its quota, and show in aclctl as its memory.
#ifndef ACLD_HAL_ACL_ARGS_RING_H_
#define ACLD_HAL_ACL_ARGS_RING_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_context.h"
#include "hal/stream.h"

namespace hal::acl {

class ArgsRing {
 public:
  // A slice: `bytes` at `offset`, charged `charge` bytes of the ring (the
  // slice and the ring's tail it skipped to start at the ring's beginning).
  struct Slice {
    uint64_t offset = 0;
    uint64_t charge = 0;
  };

  // A ring of `capacity` bytes, charged through `charge` (null: to nobody).
  static absl::StatusOr<std::shared_ptr<ArgsRing>> Create(
      std::shared_ptr<DeviceContext> context, uint64_t capacity,
      const StreamOptions::MemoryCharger& charge);
  ~ArgsRing();

  uint64_t capacity() const { return capacity_; }
  // No slice is in use.
  bool idle() const;
  // A slice of `bytes` (rounded up to 64) after the slices in use; nullopt
  // when it does not fit now.
  std::optional<Slice> Take(uint64_t bytes);
  // Hands back the oldest slice still in use (slices go back in Take order).
  void Give(const Slice& slice);
  // Takes back the newest slice, which was never used (its launch failed).
  void Untake(const Slice& slice);

  void* host(uint64_t offset) const { return static_cast<char*>(host_) + offset; }
  void* device(uint64_t offset) const { return static_cast<char*>(device_) + offset; }

 private:
  ArgsRing(std::shared_ptr<DeviceContext> context, uint64_t capacity, void* host, void* device,
           std::shared_ptr<void> charge)
      : context_(std::move(context)),
        capacity_(capacity),
        host_(host),
        device_(device),
        charge_(std::move(charge)) {}

  const std::shared_ptr<DeviceContext> context_;
  const uint64_t capacity_;
  void* const host_;
  void* const device_;
  // Let go of after the memory was freed (members go after the destructor).
  const std::shared_ptr<void> charge_;
  mutable absl::Mutex mu_;
  // Bytes ever taken and given back; their difference is in use.
  uint64_t taken_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t given_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ARGS_RING_H_
