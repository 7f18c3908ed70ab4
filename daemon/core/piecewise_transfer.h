// A synchronous copy or fill (aclrtMemcpy, aclrtMemset), checked and with its
// memory kept alive, that runs a piece at a time.
//
// acld answers these calls on threads that serve every session, and a copy
// or fill can span gigabytes: done in one go it held such a thread for
// seconds (four processes filling 1 GiB each held all of them for 9.7 s on the
// development VM, and every other session waited; docs/security.md). Run in
// slices, with other work between them, it holds a thread for about a slice.
#ifndef ACLD_DAEMON_CORE_PIECEWISE_TRANSFER_H_
#define ACLD_DAEMON_CORE_PIECEWISE_TRANSFER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hal/device.h"
#include "hal/memory.h"

namespace acld {

class PiecewiseTransfer {
 public:
  // The most a piece moves (hal/memory.h says why).
  static constexpr uint64_t kPieceBytes = hal::kTransferPieceBytes;

  // `transfer` checked, its memory kept alive by `keepalives`.
  static PiecewiseTransfer Copy(hal::Device& device, const hal::Transfer& transfer,
                                std::shared_ptr<void> keepalives);
  static PiecewiseTransfer Fill(hal::Device& device, const hal::DeviceSpan& dst, uint8_t value,
                                uint64_t count, std::shared_ptr<void> keepalives);

  uint64_t count() const { return count_; }
  // Whether it has nothing left to run (all done, or a piece failed).
  bool finished() const { return done_ == count_ || !status_.ok(); }
  // Runs pieces until `slice` has passed (at least one piece) or nothing is
  // left. The first error ends it: returned now and by every later call.
  absl::Status RunFor(absl::Duration slice);

 private:
  enum class Kind { kCopy, kFill };
  PiecewiseTransfer(Kind kind, hal::Device& device, uint64_t count,
                    std::shared_ptr<void> keepalives)
      : kind_(kind), device_(&device), count_(count), keepalives_(std::move(keepalives)) {}
  absl::Status RunPiece(uint64_t bytes);

  Kind kind_;
  hal::Device* device_;
  uint64_t count_;
  std::shared_ptr<void> keepalives_;
  hal::Transfer transfer_;  // kCopy
  hal::DeviceSpan fill_dst_;  // kFill
  uint8_t fill_value_ = 0;
  uint64_t done_ = 0;
  absl::Status status_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PIECEWISE_TRANSFER_H_
