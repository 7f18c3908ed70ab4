#include "daemon/core/piecewise_transfer.h"

#include <algorithm>
#include <utility>

namespace acld {

PiecewiseTransfer PiecewiseTransfer::Copy(hal::Device& device, const hal::Transfer& transfer,
                                          std::shared_ptr<void> keepalives) {
  PiecewiseTransfer copy(Kind::kCopy, device, transfer.count, std::move(keepalives));
  copy.transfer_ = transfer;
  return copy;
}

PiecewiseTransfer PiecewiseTransfer::Fill(hal::Device& device, const hal::DeviceSpan& dst,
                                          uint8_t value, uint64_t count,
                                          std::shared_ptr<void> keepalives) {
  PiecewiseTransfer fill(Kind::kFill, device, count, std::move(keepalives));
  fill.fill_dst_ = dst;
  fill.fill_value_ = value;
  return fill;
}

absl::Status PiecewiseTransfer::RunPiece(uint64_t bytes) {
  if (kind_ == Kind::kFill) {
    return device_->Fill(hal::Advanced(fill_dst_, done_), fill_value_, bytes);
  }
  return device_->Copy(hal::PartOf(transfer_, done_, bytes));
}

absl::Status PiecewiseTransfer::RunFor(absl::Duration slice) {
  const absl::Time end = absl::Now() + slice;
  while (!finished()) {
    const uint64_t bytes = std::min(kPieceBytes, count_ - done_);
    status_ = RunPiece(bytes);
    if (!status_.ok()) break;
    done_ += bytes;
    if (absl::Now() >= end) break;
  }
  if (finished()) keepalives_.reset();  // the memory is free to go as soon as the work is done
  return status_;
}

}  // namespace acld
